"""Where a table's files live: a :class:`Location` is a path on a :class:`Store`, the one
seam between the table code and a filesystem (``pyarrow.fs``: local disk, S3, or any
``pyarrow.fs.FileSystem`` the caller passes as ``filesystem=``).

Every store reads, lists, writes whole files and deletes. A commit also needs one
guarantee that not every store gives: *creating a file only if it does not exist*, in one
atomic step, so that of two writers claiming ``snapshot-N`` exactly one wins. Local disk
gives it with a hard link (a link never replaces a file, unlike a rename); S3 with a
conditional PUT (``If-None-Match: *``), sent through botocore because pyarrow's S3
streams cannot carry the header. Any other store refuses to create such files, naming
the guarantee it lacks, rather than commit racily.
"""

from __future__ import annotations

import contextlib
import os
import re
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs

from .errors import CorruptTableError, InvalidInputError, TableIOError, UnsupportedFeatureError

PUT_IF_ABSENT = "atomic create-if-absent (put-if-absent)"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
#: The (endpoint, bucket) pairs whose store was seen to honour conditional writes.
_HONOURS_PUT_IF_ABSENT: set[tuple[str, str]] = set()


class Store:
    """A pyarrow filesystem with the operations a table needs. This base serves any
    filesystem; the subclasses add what their kind can do better or at all."""

    def __init__(self, fs: pafs.FileSystem):
        self.fs = fs

    @property
    def local(self) -> bool:
        """Whether paths are local paths (then Rust decodes data files in place)."""
        return False

    def display(self, path: str) -> str:
        """``path`` as messages and ``Table.path`` name it."""
        return path

    def read_bytes(self, path: str) -> bytes:
        with self.fs.open_input_file(path) as f:
            return f.readall()

    def open_input(self, path: str) -> Any:
        """A seekable file (closed by the caller)."""
        return self.fs.open_input_file(path)

    def open_output(self, path: str) -> Any:
        """A new file (replacing any), whole once closed."""
        self.make_parent(path)
        return self.fs.open_output_stream(path)

    def write(self, path: str, data: bytes) -> None:
        """Writes ``path`` whole, replacing it (for hints, which readers check)."""
        with self.open_output(path) as out:
            out.write(data)

    def create_new(self, path: str, data: bytes) -> bool:
        """Creates ``path`` holding ``data`` unless it exists (then ``False``), atomically."""
        raise UnsupportedFeatureError(
            f"cannot create {self.display(path)}: its filesystem ({self.fs.type_name}) has no {PUT_IF_ABSENT}, "
            "which commits need so that two writers never both claim a snapshot; merge-core commits to local "
            "disks and S3 (conditional writes)"
        )

    def info(self, path: str) -> pafs.FileInfo | None:
        """The file's size and mtime (``None``: no such file)."""
        found = self.fs.get_file_info(path)
        return None if found.type == pafs.FileType.NotFound else found

    def listing(self, path: str, recursive: bool = False) -> list[pafs.FileInfo]:
        """What is in the directory ``path`` (nothing if it does not exist)."""
        return self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=recursive))

    def delete(self, path: str) -> None:
        """Removes the file ``path`` if it exists."""
        try:
            self.fs.delete_file(path)
        except FileNotFoundError:
            pass

    def delete_tree(self, path: str) -> None:
        """Removes the directory ``path`` and all below it, if it exists."""
        try:
            self.fs.delete_dir(path)
        except FileNotFoundError:
            pass

    def move(self, source: str, target: str) -> None:
        """Moves a file, replacing ``target`` (a rename on disk, a copy and a delete on S3)."""
        self.fs.move(source, target)

    def make_parent(self, path: str) -> None:
        """Makes the directories above ``path`` (where a store has directories)."""
        self.fs.create_dir(path.rpartition("/")[0], recursive=True)

    def remove_empty_dirs(self, root: str, path: str) -> None:
        """Removes the directories above ``path`` left empty, up to ``root``, where a
        store has directories."""


class LocalStore(Store):
    """The local disk: files created with a hard link and synced, as Paimon's local
    filesystem does; data files decoded in place by Rust."""

    def __init__(self) -> None:
        super().__init__(pafs.LocalFileSystem())

    @property
    def local(self) -> bool:
        return True

    def write(self, path: str, data: bytes) -> None:
        temporary = _temporary(path)
        try:
            Path(temporary).write_bytes(data)
            os.replace(temporary, path)
        finally:
            Path(temporary).unlink(missing_ok=True)

    def create_new(self, path: str, data: bytes) -> bool:
        """Written to a temporary file beside ``path``, synced, then hard-linked to its
        name (a link never replaces a file) and the directory synced."""
        self.make_parent(path)
        temporary = _temporary(path)
        try:
            with open(temporary, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            try:
                os.link(temporary, path)
            except FileExistsError:
                return False
            directory = os.open(os.path.dirname(path), os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
            return True
        finally:
            Path(temporary).unlink(missing_ok=True)

    def make_parent(self, path: str) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)

    def remove_empty_dirs(self, root: str, path: str) -> None:
        directory = os.path.dirname(path)
        while directory.startswith(root + os.sep):
            try:
                os.rmdir(directory)
            except OSError:
                return  # not empty
            directory = os.path.dirname(directory)


class S3Store(Store):
    """An S3 bucket (or an S3-compatible server): reads, lists and streams through
    pyarrow; the conditional PUT of a commit, and deletes (pyarrow's leave an empty
    "directory" object behind), through a botocore client to the same endpoint. A read
    or a listing that fails for another reason than a missing file (the endpoint cannot
    be reached, a request is denied) raises a TableIOError naming the file and endpoint."""

    def __init__(self, fs: pafs.S3FileSystem):
        super().__init__(fs)
        self._client: Any = None

    def __getstate__(self) -> dict[str, Any]:
        """A store travels to Spark's executors without its client (made again there)."""
        return {**self.__dict__, "_client": None}

    def display(self, path: str) -> str:
        return f"s3://{path}"

    @property
    def endpoint(self) -> str:
        """The server the store talks to: its endpoint, or AWS's S3 in the store's region."""
        options = self.fs.__reduce__()[1][0]
        return options.get("endpoint_override") or f"AWS S3 ({options.get('region') or 'default region'})"

    @contextlib.contextmanager
    def _reaching(self, path: str) -> Iterator[None]:
        try:
            yield
        except (FileNotFoundError, TableIOError):
            raise
        except OSError as e:
            raise TableIOError(f"reading {self.display(path)} from {self.endpoint} failed: {e}") from e

    def read_bytes(self, path: str) -> bytes:
        with self._reaching(path):
            return super().read_bytes(path)

    def open_input(self, path: str) -> Any:
        with self._reaching(path):
            return super().open_input(path)

    def info(self, path: str) -> pafs.FileInfo | None:
        with self._reaching(path):
            return super().info(path)

    def listing(self, path: str, recursive: bool = False) -> list[pafs.FileInfo]:
        with self._reaching(path):
            return super().listing(path, recursive)

    def make_parent(self, path: str) -> None:
        """Nothing: S3 has no directories (pyarrow would write empty marker objects)."""

    def create_new(self, path: str, data: bytes) -> bool:
        self._check_put_if_absent(path.rpartition("/")[0])
        return self._put_if_absent(path, data)

    def _put_if_absent(self, path: str, data: bytes) -> bool:
        client = self._s3()
        import botocore.exceptions

        bucket, key = _bucket_key(path)
        try:
            client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
        except botocore.exceptions.ClientError as e:
            # 412: the object exists. 409: another conditional write of it was under
            # way; S3 asks to retry, which the commit does on a fresh read of the table.
            if e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") in (412, 409):
                return False
            raise OSError(f"creating {self.display(path)} failed: {e}") from e
        except botocore.exceptions.BotoCoreError as e:
            raise OSError(f"creating {self.display(path)} failed: {e}") from e
        return True

    def _check_put_if_absent(self, directory: str) -> None:
        """Fails unless the store honours ``If-None-Match: *``: some S3-compatible
        servers ignore it and overwrite, which would make commits silently racy. The
        probe creates an object in ``directory`` twice (the second must fail), then
        removes it; once per endpoint and bucket in a process (every task of a Spark job
        opens its own store)."""
        checked = (self.endpoint, _bucket_key(directory)[0])
        if checked in _HONOURS_PUT_IF_ABSENT:
            return
        probe = f"{directory}/.put-if-absent-probe-{uuid.uuid4()}"
        try:
            honoured = self._put_if_absent(probe, b"") and not self._put_if_absent(probe, b"")
        finally:
            self.delete(probe)
        if not honoured:
            raise UnsupportedFeatureError(
                f"the S3 store of {self.display(directory)} ignores conditional writes (If-None-Match: *): "
                f"without {PUT_IF_ABSENT} two writers could both claim a snapshot, so merge-core does not commit there"
            )
        _HONOURS_PUT_IF_ABSENT.add(checked)

    def delete(self, path: str) -> None:
        client = self._s3()
        import botocore.exceptions

        bucket, key = _bucket_key(path)
        try:
            client.delete_object(Bucket=bucket, Key=key)  # deleting an absent key succeeds
        except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as e:
            raise OSError(f"removing {self.display(path)} failed: {e}") from e

    def delete_tree(self, path: str) -> None:
        """Every object below ``path``, one by one (pyarrow's ``delete_dir`` would leave a
        "directory" marker for the parent behind)."""
        for info in self.listing(path, recursive=True):
            if info.type == pafs.FileType.File:
                self.delete(info.path)
        self.delete(f"{path}/")  # a marker, if a tool made one

    def move(self, source: str, target: str) -> None:
        self.fs.copy_file(source, target)
        self.delete(source)

    def _s3(self) -> Any:
        if self._client is None:
            self._client = _s3_client(self.fs)
        return self._client


def _bucket_key(path: str) -> tuple[str, str]:
    bucket, _, key = path.partition("/")
    return bucket, key


def _s3_client(fs: pafs.S3FileSystem) -> Any:
    """A botocore S3 client with ``fs``'s endpoint, credentials, region and addressing.
    pyarrow exposes a filesystem's options only as the arguments it pickles with."""
    try:
        import boto3
        import botocore.config
    except ImportError as e:
        raise UnsupportedFeatureError(
            f"committing to S3 needs boto3 for conditional writes: pip install 'merge-core[s3]' ({e})"
        ) from e
    options = fs.__reduce__()[1][0]
    endpoint = options.get("endpoint_override") or None
    if endpoint and "://" not in endpoint:
        endpoint = f"{options.get('scheme') or 'https'}://{endpoint}"
    config = botocore.config.Config(
        s3={"addressing_style": "virtual" if options.get("force_virtual_addressing") else "path"},
        signature_version=botocore.UNSIGNED if options.get("anonymous") else None,
    )
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        region_name=options.get("region") or None,
        aws_access_key_id=options.get("access_key") or None,
        aws_secret_access_key=options.get("secret_key") or None,
        aws_session_token=options.get("session_token") or None,
        config=config,
    )


def _temporary(path: str) -> str:
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.{uuid.uuid4()}.tmp")


@dataclass(frozen=True)
class Location:
    """A file or directory of a table: ``path`` on ``store``, joined with ``/``."""

    store: Store
    path: str

    def __truediv__(self, name: str) -> Location:
        """What ``name`` (one or more names joined by ``/``) names below this location.
        The names come from a table's metadata and options, all checked where they are
        read; a part that would lead elsewhere (``..``, ``.``, empty: an absolute path)
        is refused here too, as the last guard of every path a table reads, writes or
        removes."""
        if any(part in ("", ".", "..") for part in name.split("/")):
            raise CorruptTableError(f"{name!r} does not name a file below {self}")
        return Location(self.store, f"{self.path.rstrip('/')}/{name}")

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rpartition("/")[2]

    def __str__(self) -> str:
        return self.store.display(self.path)

    def read_bytes(self) -> bytes:
        return self.store.read_bytes(self.path)

    def read_text(self) -> str:
        return self.read_bytes().decode()

    def write_text(self, text: str) -> None:
        self.store.write(self.path, text.encode())

    def create_new(self, text: str) -> bool:
        return self.store.create_new(self.path, text.encode())

    def exists(self) -> bool:
        return self.store.info(self.path) is not None

    def names(self, prefix: str = "") -> list[str]:
        """The names of what is directly in this directory, starting with ``prefix``."""
        names = (info.base_name for info in self.store.listing(self.path))
        return sorted(n for n in names if n.startswith(prefix))

    def delete(self) -> None:
        self.store.delete(self.path)


def resolve(path: str | os.PathLike[str], filesystem: pafs.FileSystem | None = None) -> Location:
    """A table's root (or any file or folder) from what the caller gave: a local path, a ``file://`` or ``s3://``
    URI (S3 configured as the AWS tools are, ``AWS_ENDPOINT_URL`` included), or a path
    on ``filesystem``. Another scheme is refused: taken as a local path it would become a
    folder named ``oss:`` beside the caller."""
    text = os.fspath(path)
    scheme = _SCHEME.match(text)
    if filesystem is not None:
        return _on(filesystem, text, scheme)
    if scheme is None:
        return Location(LocalStore(), os.path.abspath(text))
    name = scheme.group(1).lower()
    if name == "file":
        return Location(LocalStore(), os.path.abspath(urllib.parse.unquote(urllib.parse.urlparse(text).path)))
    if name == "s3":
        try:
            fs, inner = pafs.FileSystem.from_uri(text)
        except (OSError, ValueError) as e:
            raise TableIOError(f"cannot reach {text}: {e}") from e
        return Location(S3Store(fs), inner.rstrip("/"))
    raise UnsupportedFeatureError(
        f"paths on {name}:// are not supported yet (merge-core takes local paths, file:// and s3:// URIs, "
        f"or a path on a pyarrow filesystem given as filesystem=): {text}"
    )


def _on(filesystem: pafs.FileSystem, text: str, scheme: re.Match[str] | None) -> Location:
    """``text`` on the caller's filesystem (a URI's scheme must be that filesystem's)."""
    if not isinstance(filesystem, pafs.FileSystem):
        raise InvalidInputError(f"filesystem must be a pyarrow.fs.FileSystem, got {type(filesystem).__name__}")
    if isinstance(filesystem, pafs.LocalFileSystem):
        return resolve(text)
    if scheme is not None:
        if isinstance(filesystem, pafs.S3FileSystem) and scheme.group(1).lower() == "s3":
            text = text[len(scheme.group(0)) :]
        else:
            raise InvalidInputError(f"{text} is a URI; with filesystem= give the path on that filesystem")
    store = S3Store(filesystem) if isinstance(filesystem, pafs.S3FileSystem) else Store(filesystem)
    return Location(store, text.rstrip("/"))
