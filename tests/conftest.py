import atexit
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "pyshim"))

# The suite's compiled code goes to an on-disk cache of its own, made for this run and removed after it: the suite
# exercises the cache's save path on every compilation without filling (or reading stale entries from) the user's
# ~/.cache/lorikeet. A run that sets LORIKEET_CACHE_DIR or LORIKEET_CACHE itself keeps its setting.
if "LORIKEET_CACHE_DIR" not in os.environ:
    _suite_cache = tempfile.mkdtemp(prefix="lorikeet-test-cache-")
    os.environ["LORIKEET_CACHE_DIR"] = _suite_cache
    atexit.register(shutil.rmtree, _suite_cache, True)
