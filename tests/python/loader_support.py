"""Shared-loader set-up of colo's Python tests: a small image folder with its
DATA.toml, and a running `colo loader serve` over it."""
import subprocess
import textwrap
import time


def small_image_data(colo_executable, folder):
    """Writes 300 synthetic 32 px JPEGs under `folder`/images and a DATA.toml
    over them (24 px crops, one decode thread, a ring of 4 chunks of 16,
    quick to leave a stalled or silent consumer behind, an address in
    `folder`); returns the DATA.toml's path."""
    subprocess.run([colo_executable, "loader", "write-images", "--source", "synthetic", "--limit", "300",
                    "--size", "32", "--out", str(folder / "images")], check=True, capture_output=True)
    data = folder / "data.toml"
    data.write_text(textwrap.dedent(f"""\
        root = "images"
        size = 24
        threads = 1
        chunk = 16
        buffer = 4
        stall_s = 1
        heartbeat_timeout_s = 1
        address = "ipc://{folder}/loader.sock"
        """))
    return data


def serve(colo_executable, data, address, *options):
    """Starts `colo loader serve data [options]`; returns the process once it
    answers at `address` (or after 4 s, for the test to find out why)."""
    producer = subprocess.Popen([colo_executable, "loader", "serve", str(data), "--report", "0", *options],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(40):
        if subprocess.run([colo_executable, "loader", "status", address, "--timeout", "0.5"],
                          capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    return producer
