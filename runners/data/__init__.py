"""Dataset access: verified downloads, the local data cache, and readers of each dataset.

Nothing here touches the disk or network at import time; every function takes its paths.
"""
from runners.data.digits import load_digits_splits
from runners.data.download import ChecksumError, download, file_sha256
from runners.data.shakespeare import data_root, read_tinyshakespeare, tinyshakespeare_path

__all__ = ["ChecksumError", "download", "file_sha256", "data_root", "tinyshakespeare_path",
           "read_tinyshakespeare", "load_digits_splits"]
