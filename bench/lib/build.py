"""Builds tutti's release binaries as deploy/setup.sh does: with Swift's runtime linked
statically (as a package ships them), so every bench measures what a house runs."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def release(*products):
    """Installs what benches need beyond running tutti (deploy/test-setup.sh: Snapcast,
    valgrind, ...), builds `products` (default: tutti) and returns their paths, in order."""
    products = products or ("tutti",)
    subprocess.run([os.path.join(ROOT, "deploy/test-setup.sh")], cwd=ROOT, check=True)
    for product in products:
        subprocess.run(["swift", "build", "-c", "release", "--static-swift-stdlib", "--product", product], cwd=ROOT,
                       check=True, stdout=subprocess.DEVNULL)
    paths = [os.path.join(ROOT, ".build/release", p) for p in products]
    return paths if len(paths) > 1 else paths[0]
