"""The artifact store: every trained folder and every upload, content-addressed, where every host reaches it.

Hosts share no filesystem. A folder is *published* where it is finished (:func:`webapp.artifacts.manifests.publish`):
its files' sha256 and sizes are recorded under the path the database row holds, and the bytes go to the blob store
(PostgreSQL by default, an S3 bucket with ``ARTIFACT_STORE=s3``). Every load site asks
:func:`webapp.artifacts.local.ensure_local` for that path and gets a folder on this host: the original where it is
here, else a verified copy in ``ARTIFACT_ROOT/cache/store/``. docs/artifacts.md.
"""
