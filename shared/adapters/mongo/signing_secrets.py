"""The MongoDB store's signing secrets: collection ``signing_secrets``, one document a tenant
(``_id`` the tenant) holding its set whole (each secret sealed), changed by compare-and-set on
``version``. A read of several tenants is one ``find`` by ``_id``."""

from __future__ import annotations

from collections.abc import Collection as Tenants
from typing import Any

from pymongo.collection import Collection
from pymongo.errors import DuplicateKeyError

from shared.adapters.mongo.transient import transient
from shared.ports import SigningSecretSet, SigningSecretStore, StoredSigningSecret
from shared.timeutil import maybe, utc_ms

Document = dict[str, Any]


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
        stored = [_fields(secret) for secret in secrets.secrets]
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


def _fields(secret: StoredSigningSecret) -> Document:
    return {
        "id": secret.secret_id,
        "sealed": secret.sealed,
        "created_at": maybe(utc_ms, secret.created_at),
        "retires_at": maybe(utc_ms, secret.retires_at),
    }


def _secret_set(document: Document) -> SigningSecretSet:
    return SigningSecretSet(
        document["_id"],
        document["version"],
        tuple(
            StoredSigningSecret(
                item["id"],
                item["sealed"],
                maybe(utc_ms, item["created_at"]),
                maybe(utc_ms, item["retires_at"]),
            )
            for item in document["secrets"]
        ),
    )
