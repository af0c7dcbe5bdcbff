"""Document.changed_at: when the document, its mentions or their links were last written (issue #45: a pipeline
exports what changed since its last export).

Existing documents take the time of the migration (a pipeline that asks what changed since an earlier time gets
them all, none is missed). Statement triggers keep it, so every writer counts (the ORM, bulk_create, COPY, raw SQL):
after an insert, update or delete of mentions or links, the documents they belong to are stamped with the
transaction's time, once a transaction (a row already stamped by it is not written again).
"""

import django.db.models.functions.datetime
import django.utils.timezone
from django.db import migrations, models

_STAMP = "UPDATE corpus_document SET changed_at = now() WHERE id IN ({ids}) AND changed_at IS DISTINCT FROM now();"
_MENTIONS = "SELECT document_id FROM {rows}"
_LINKS = "SELECT m.document_id FROM corpus_mention m WHERE m.id IN (SELECT mention_id FROM {rows})"


def _function(table: str, ids: str) -> str:
    new, old, both = (_STAMP.format(ids=ids.format(rows=rows)) for rows in ("new_rows", "old_rows", "changed_rows"))
    return f"""
CREATE OR REPLACE FUNCTION corpus_document_touch_by_{table}() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {new}
    ELSIF TG_OP = 'DELETE' THEN
        {old}
    ELSE
        {both.replace("changed_rows", "(SELECT * FROM new_rows UNION ALL SELECT * FROM old_rows) AS changed_rows")}
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
""" + "".join(
        f"""CREATE TRIGGER corpus_document_touch_{table}_{op.lower()}
    AFTER {op} ON corpus_{table} REFERENCING {refs}
    FOR EACH STATEMENT EXECUTE FUNCTION corpus_document_touch_by_{table}();
"""
        for op, refs in (("INSERT", "NEW TABLE AS new_rows"), ("DELETE", "OLD TABLE AS old_rows"),
                         ("UPDATE", "NEW TABLE AS new_rows OLD TABLE AS old_rows"))
    )


CREATE = _function("mention", _MENTIONS) + _function("link", _LINKS)
DROP = "".join(
    f"DROP TRIGGER IF EXISTS corpus_document_touch_{table}_{op} ON corpus_{table};\n"
    for table in ("mention", "link") for op in ("insert", "delete", "update")
) + "DROP FUNCTION IF EXISTS corpus_document_touch_by_mention();\nDROP FUNCTION IF EXISTS corpus_document_touch_by_link();\n"


class Migration(migrations.Migration):

    dependencies = [
        ('corpus', '0010_mention_text_upper_hash'),
    ]

    operations = [
        migrations.AddField(
            model_name='document',
            name='changed_at',
            field=models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), default=django.utils.timezone.now, editable=False),
        ),
        migrations.AddIndex(
            model_name='document',
            index=models.Index(fields=['changed_at'], name='document_changed_at'),
        ),
        migrations.RunSQL(CREATE, DROP),
    ]
