"""Concept search's word list (webapp.vocab.models.Term), kept by triggers on vocab_name and filled from the names
already stored.

Statement-level triggers with transition tables: a COPY of 5,000 names updates the counts once, not 5,000 times;
a dictionary import defers its own (the setting vocab.terms_deferred) and writes them once at the end.
Words are the normalised name split on whitespace, counted once per name (webapp.vocab.spelling splits queries
the same way).
"""

import django.contrib.postgres.indexes
import django.db.models.deletion
from django.db import migrations, models

# (version, word, names) of a set of name rows; the names' concepts must still exist (they do: a concept's names
# are deleted before it).
_WORDS_OF = """
    SELECT c.version_id, w.term, count(*) AS n
    FROM {rows} r
    JOIN vocab_concept c ON c.id = r.concept_id
    CROSS JOIN LATERAL (SELECT DISTINCT word AS term FROM regexp_split_to_table(r.normalized, '\\s+') word WHERE word <> '') w
    GROUP BY c.version_id, w.term
"""

_ADD = """
    INSERT INTO vocab_term (version_id, term, names)
    SELECT version_id, term, n FROM ({words}) added
    ON CONFLICT (version_id, term) DO UPDATE SET names = vocab_term.names + EXCLUDED.names;
"""

_REMOVE = """
    UPDATE vocab_term t SET names = t.names - removed.n
    FROM ({words}) removed
    WHERE t.version_id = removed.version_id AND t.term = removed.term;
"""

FORWARD = f"""
CREATE FUNCTION vocab_terms_names_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A dictionary import writes its version's words once at the end (webapp.vocab.terms): counting them per
    -- COPY batch updated each common word hundreds of times and made the 3M-name import 60 % slower.
    IF current_setting('vocab.terms_deferred', true) = 'on' THEN
        RETURN NULL;
    END IF;
    {_ADD.format(words=_WORDS_OF.format(rows="new_names"))}
    RETURN NULL;
END $$;

CREATE FUNCTION vocab_terms_names_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {_REMOVE.format(words=_WORDS_OF.format(rows="old_names"))}
    RETURN NULL;
END $$;

CREATE FUNCTION vocab_terms_names_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {_REMOVE.format(words=_WORDS_OF.format(rows="old_names"))}
    {_ADD.format(words=_WORDS_OF.format(rows="new_names"))}
    RETURN NULL;
END $$;

CREATE TRIGGER vocab_name_terms_added AFTER INSERT ON vocab_name
    REFERENCING NEW TABLE AS new_names FOR EACH STATEMENT EXECUTE FUNCTION vocab_terms_names_added();
CREATE TRIGGER vocab_name_terms_removed AFTER DELETE ON vocab_name
    REFERENCING OLD TABLE AS old_names FOR EACH STATEMENT EXECUTE FUNCTION vocab_terms_names_removed();
CREATE TRIGGER vocab_name_terms_changed AFTER UPDATE ON vocab_name
    REFERENCING OLD TABLE AS old_names NEW TABLE AS new_names FOR EACH STATEMENT EXECUTE FUNCTION vocab_terms_names_changed();

{_ADD.format(words=_WORDS_OF.format(rows="vocab_name"))}
ANALYZE vocab_term;
"""

BACKWARD = """
DROP TRIGGER IF EXISTS vocab_name_terms_added ON vocab_name;
DROP TRIGGER IF EXISTS vocab_name_terms_removed ON vocab_name;
DROP TRIGGER IF EXISTS vocab_name_terms_changed ON vocab_name;
DROP FUNCTION IF EXISTS vocab_terms_names_added();
DROP FUNCTION IF EXISTS vocab_terms_names_removed();
DROP FUNCTION IF EXISTS vocab_terms_names_changed();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('vocab', '0004_name_prefix_length'),
    ]

    operations = [
        migrations.CreateModel(
            name='Term',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('term', models.TextField()),
                ('names', models.IntegerField(default=0, help_text='Names of the version this word occurs in.')),
                ('version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='terms', to='vocab.dictionaryversion')),
            ],
            options={
                'indexes': [django.contrib.postgres.indexes.GinIndex(fields=['term'], name='term_trgm', opclasses=['gin_trgm_ops'])],
                'constraints': [models.UniqueConstraint(fields=('version', 'term'), name='unique_term_per_version')],
            },
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
