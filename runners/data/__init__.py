"""Dataset access: verified downloads, the local data cache, and readers of each dataset.

Nothing here touches the disk or network at import time; every function takes its paths.
"""
from runners.data.cifar10 import load_cifar10_splits, read_cifar10_tarball
from runners.data.corpus import GeneratedCorpus
from runners.data.digits import load_digits_splits
from runners.data.download import ChecksumError, RemoteFiles, download, fetch_files, file_sha256
from runners.data.idx import read_idx
from runners.data.mnist import load_mnist_like_splits
from runners.data.mnist1d import load_mnist1d_splits
from runners.data.shakespeare import data_root, read_tinyshakespeare, tinyshakespeare_path
from runners.data.tokens import TokenSource, token_source

__all__ = ["ChecksumError", "download", "file_sha256", "RemoteFiles", "fetch_files", "data_root",
           "tinyshakespeare_path", "read_tinyshakespeare", "load_digits_splits", "read_idx",
           "load_mnist_like_splits", "load_mnist1d_splits", "read_cifar10_tarball", "load_cifar10_splits",
           "GeneratedCorpus", "TokenSource", "token_source"]
