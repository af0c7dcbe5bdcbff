"""A mention's span lies inside its document's text and its text is exactly those characters.

A CHECK constraint cannot read the document row, so a trigger enforces it for every insert and update,
whoever writes (importers, the API, the admin, raw SQL). Offsets count characters, as Python's do.
"""

from django.db import migrations

CREATE = r"""
CREATE OR REPLACE FUNCTION corpus_mention_span_check() RETURNS trigger AS $$
DECLARE
    doc_text text;
BEGIN
    SELECT text INTO doc_text FROM corpus_document WHERE id = NEW.document_id;
    IF NEW.start < 0 OR NEW."end" > char_length(doc_text) THEN
        RAISE EXCEPTION 'mention span %-% lies outside document % (length %)',
            NEW.start, NEW."end", NEW.document_id, char_length(doc_text)
            USING ERRCODE = 'check_violation', CONSTRAINT = 'mention_span_inside_text';
    END IF;
    IF substr(doc_text, NEW.start + 1, NEW."end" - NEW.start) <> NEW.text THEN
        RAISE EXCEPTION 'mention text % does not match the document text % at %-%',
            quote_literal(NEW.text), quote_literal(substr(doc_text, NEW.start + 1, NEW."end" - NEW.start)),
            NEW.start, NEW."end"
            USING ERRCODE = 'check_violation', CONSTRAINT = 'mention_text_matches_span';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER corpus_mention_span_check
    BEFORE INSERT OR UPDATE OF start, "end", text, document_id ON corpus_mention
    FOR EACH ROW EXECUTE FUNCTION corpus_mention_span_check();
"""

DROP = """
DROP TRIGGER IF EXISTS corpus_mention_span_check ON corpus_mention;
DROP FUNCTION IF EXISTS corpus_mention_span_check();
"""


class Migration(migrations.Migration):
    dependencies = [("corpus", "0001_initial")]
    operations = [migrations.RunSQL(CREATE, DROP)]
