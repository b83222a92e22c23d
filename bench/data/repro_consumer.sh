#!/usr/bin/env bash
# Reproduces a Python SharedLoader consumer against `colo loader serve` on this
# machine: C++ consumer first, then Python, then Python under cuda-gdb.
set -u
BUILD=${BUILD:-build-gpu}
T=$(mktemp -d)
"$BUILD/colo" loader write-images --source synthetic --limit 300 --size 32 --out "$T/images" >/dev/null
cat >"$T/data.toml" <<TOML
root = "images"
size = 24
threads = 1
chunk = 16
address = "ipc://$T/loader.sock"
TOML
"$BUILD/colo" loader serve "$T/data.toml" --report 0 & P=$!
sleep 1
echo "== C++ consumer"; "$BUILD/colo" loader consume "ipc://$T/loader.sock" --batch-size 8 --batches 5; echo "rc=$?"
echo "== python"
PYTHONPATH="$BUILD/python" python3 -X faulthandler -c "
import colo._core as c
print('core loaded', flush=True)
x = c.SharedLoaderClient('ipc://$T/loader.sock', 8, 5.0)
print('client ok', x.sample_shape, flush=True)
import colo.data
l = colo.data.SharedLoader('ipc://$T/loader.sock', 8)
print('loader ok', l.next_batch()[0].shape, flush=True)
"; echo "rc=$?"
echo "== ldd"; ldd "$BUILD"/python/colo/_core*.so | grep -E "zmq|jpeg|sodium|stdc|torch_python|not found"
echo "== cuda-gdb"
PYTHONPATH="$BUILD/python" timeout 120 cuda-gdb -batch -ex run -ex bt -ex "info sharedlibrary" --args python3 -c "
import colo._core as c
x = c.SharedLoaderClient('ipc://$T/loader.sock', 8, 5.0)
print('client ok', flush=True)
" 2>&1 | grep -v "^\[New Thread\|^\[Thread" | head -80
kill $P
