"""A stand-in for lorikeet._cache (the on-disk store, built separately) with the same interface, for
test_cache.py until the real store is merged: one file per entry, <dir>/<generation>/<digest>.lkc, written to a
temporary name and renamed; the stored preimage must equal the asked one. No checksums, permissions or
eviction: those are the real store's, and its own tests'."""
import json
import os


class Store:
    def __init__(self, root):
        self.root = root

    def _path(self, digest, generation):
        return os.path.join(self.root, generation, digest + ".lkc")

    def load(self, digest, preimage, generation):
        try:
            with open(self._path(digest, generation), "rb") as f:
                entry = json.loads(f.read())
            if bytes.fromhex(entry["preimage"]) != preimage:
                return None
            return {k: bytes.fromhex(v) for k, v in entry["records"].items()}
        except Exception:
            return None

    def save(self, digest, preimage, generation, records):
        path = self._path(digest, generation)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                json.dump({"preimage": preimage.hex(), "records": {k: v.hex() for k, v in records.items()}}, f)
            os.replace(tmp, path)
            return True
        except OSError:
            return False


def store():
    if os.environ.get("LORIKEET_CACHE", "1") == "0":
        return None
    root = os.environ.get("LORIKEET_CACHE_DIR")
    return Store(root) if root else None
