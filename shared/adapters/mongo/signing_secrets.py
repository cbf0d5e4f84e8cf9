"""The MongoDB store's signing secrets: collection ``signing_secrets``, one document a tenant
(``_id`` the tenant) holding its set whole (each secret sealed), changed by compare-and-set on
``version``. A read of several tenants is one ``find`` by ``_id``."""

from __future__ import annotations

from collections.abc import Collection as Tenants

from pymongo.collection import Collection
from pymongo.errors import DuplicateKeyError

from shared.adapters.mongo import documents as codec
from shared.adapters.mongo.documents import Document
from shared.adapters.mongo.transient import transient
from shared.adapters.records import SIGNING_SECRET, signing_secret_fields, signing_secret_of
from shared.ports import SigningSecretSet, SigningSecretStore


class MongoSigningSecrets(SigningSecretStore):
    signing_secrets: Collection[Document]

    def get_signing_secrets(self, tenants: Tenants[str]) -> dict[str, SigningSecretSet]:
        wanted = sorted(set(tenants))
        if not wanted:
            return {}
        with transient("get_signing_secrets"):
            documents = list(self.signing_secrets.find({"_id": {"$in": wanted}}))
        return {document["_id"]: _secret_set(document) for document in documents}

    def put_signing_secrets(self, secrets: SigningSecretSet) -> bool:
        stored = [
            codec.document_of(signing_secret_fields(secret), SIGNING_SECRET)
            for secret in secrets.secrets
        ]
        with transient("put_signing_secrets"):
            if secrets.version == 1:
                try:
                    self.signing_secrets.insert_one(
                        {"_id": secrets.tenant, "version": 1, "secrets": stored}
                    )
                except DuplicateKeyError:
                    return False
                return True
            result = self.signing_secrets.update_one(
                {"_id": secrets.tenant, "version": secrets.version - 1},
                {"$set": {"version": secrets.version, "secrets": stored}},
            )
        return result.matched_count == 1


def _secret_set(document: Document) -> SigningSecretSet:
    return SigningSecretSet(
        document["_id"],
        document["version"],
        tuple(
            signing_secret_of(codec.fields_of(entry, SIGNING_SECRET))
            for entry in document["secrets"]
        ),
    )
