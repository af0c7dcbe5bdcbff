"""The span check of inserted mentions runs once per statement, walking each document's text once.

0002's row trigger read the whole document text for every inserted mention and found the mention's characters
with ``substr``, which counts UTF-8 characters from the start of the text: a cost proportional to the text for
each mention. A 5 MB note with 1,547 detected mentions took 60 s to insert (38 ms a mention), before any
linking. Now an insert statement checks its mentions together: per document the text is read once, the mentions
are taken in order of their start, and each is found by moving forward from the previous one in the text's
UTF-8 bytes, so a statement costs one pass over the text plus the mentions' lengths (0.6 s for the same note).

The rule and its errors are 0002's (same messages, same constraint names). Updates of a mention's span keep 0002's
row trigger: a curator fixes one span at a time, and PostgreSQL does not give a statement trigger with a column
list the rows it changed.
"""

from django.db import migrations

CREATE = r"""
CREATE OR REPLACE FUNCTION corpus_mention_spans_check() RETURNS trigger AS $$
DECLARE
    doc_id bigint;
    doc_text text;
    doc_bytes bytea;
    doc_length integer;
    total_bytes integer;
    m record;
    char_at integer;  -- characters of the text before byte_at
    byte_at integer;  -- a character boundary in doc_bytes
    stop integer;
    piece text;
    actual text;
BEGIN
    FOR doc_id IN SELECT DISTINCT document_id FROM inserted_mentions LOOP
        SELECT text INTO doc_text FROM corpus_document WHERE id = doc_id;
        doc_length := char_length(doc_text);
        doc_bytes := convert_to(doc_text, 'UTF8');
        total_bytes := octet_length(doc_bytes);
        char_at := 0;
        byte_at := 0;
        FOR m IN SELECT n.start, n."end", n.text FROM inserted_mentions n WHERE n.document_id = doc_id
                 ORDER BY n.start LOOP
            IF m.start < 0 OR m."end" > doc_length THEN
                RAISE EXCEPTION 'mention span %-% lies outside document % (length %)',
                    m.start, m."end", doc_id, doc_length
                    USING ERRCODE = 'check_violation', CONSTRAINT = 'mention_span_inside_text';
            END IF;
            -- The bytes from byte_at up to the mention's end: at most 4 a character, cut at a character boundary
            -- (never before a UTF-8 continuation byte, 10xxxxxx).
            stop := least(total_bytes, byte_at + 4 * (m."end" - char_at));
            WHILE stop < total_bytes AND get_byte(doc_bytes, stop) BETWEEN 128 AND 191 LOOP
                stop := stop + 1;
            END LOOP;
            piece := convert_from(substring(doc_bytes FROM byte_at + 1 FOR stop - byte_at), 'UTF8');
            actual := substr(piece, m.start - char_at + 1, m."end" - m.start);
            IF actual IS DISTINCT FROM m.text THEN
                RAISE EXCEPTION 'mention text % does not match the document text % at %-%',
                    quote_literal(m.text), quote_literal(actual), m.start, m."end"
                    USING ERRCODE = 'check_violation', CONSTRAINT = 'mention_text_matches_span';
            END IF;
            byte_at := byte_at + octet_length(left(piece, m.start - char_at));
            char_at := m.start;
        END LOOP;
    END LOOP;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS corpus_mention_span_check ON corpus_mention;
CREATE TRIGGER corpus_mention_spans_check
    AFTER INSERT ON corpus_mention REFERENCING NEW TABLE AS inserted_mentions
    FOR EACH STATEMENT EXECUTE FUNCTION corpus_mention_spans_check();
CREATE TRIGGER corpus_mention_span_check
    BEFORE UPDATE OF start, "end", text, document_id ON corpus_mention
    FOR EACH ROW EXECUTE FUNCTION corpus_mention_span_check();
"""

DROP = """
DROP TRIGGER IF EXISTS corpus_mention_spans_check ON corpus_mention;
DROP FUNCTION IF EXISTS corpus_mention_spans_check();
DROP TRIGGER IF EXISTS corpus_mention_span_check ON corpus_mention;
CREATE TRIGGER corpus_mention_span_check
    BEFORE INSERT OR UPDATE OF start, "end", text, document_id ON corpus_mention
    FOR EACH ROW EXECUTE FUNCTION corpus_mention_span_check();
"""


class Migration(migrations.Migration):
    dependencies = [("corpus", "0008_link_mention_origin_index")]
    operations = [migrations.RunSQL(CREATE, DROP)]
