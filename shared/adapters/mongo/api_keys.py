"""The MongoDB store's API keys (their hashes, each the key of its document)."""

from __future__ import annotations

from pymongo.errors import DuplicateKeyError

from shared.adapters.mongo import documents as codec
from shared.adapters.mongo.base import Document, MongoBacked
from shared.adapters.mongo.transient import transient
from shared.adapters.records import API_KEY, api_key_fields
from shared.ports import ApiKey, ApiKeyStore
from shared.store_rules import is_key_id


class MongoApiKeys(MongoBacked, ApiKeyStore):
    def add_api_key(self, key: ApiKey) -> bool:
        with transient("add_api_key"):
            try:
                fields = api_key_fields(key)
                document = codec.document_of(fields, API_KEY)
                self.api_keys.insert_one({"_id": document.pop("key_hash"), **document})
            except DuplicateKeyError:
                return False
        return True

    def find_api_key(self, key_hash: str) -> ApiKey | None:
        with transient("find_api_key"):
            document = self.api_keys.find_one({"_id": key_hash})
        return None if document is None else self.api_key_from(document)

    def list_api_keys(self, tenant: str | None = None) -> list[ApiKey]:
        selector: Document = {} if tenant is None else {"tenant": tenant}
        with transient("list_api_keys"):
            documents = list(self.api_keys.find(selector))
        keys = [self.api_key_from(document) for document in documents]
        return sorted(keys, key=lambda key: (key.created_at, key.key_hash))

    def delete_api_key(self, key_id: str) -> int:
        if not is_key_id(key_id):
            return 0
        with transient("delete_api_key"):
            result = self.api_keys.delete_many({"_id": {"$regex": f"^{key_id}"}})
        return result.deleted_count
