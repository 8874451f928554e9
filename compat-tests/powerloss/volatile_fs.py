#!/usr/bin/env python3
"""A FUSE file system that loses what was not fsynced, as a machine losing power does.

    volatile_fs.py STORE MOUNTPOINT

Every file and directory under MOUNTPOINT is the one under STORE. File data written through
the mount is kept in this process's memory until the file is fsynced (fsync or fdatasync, by
any open handle), and only then written to STORE (and fsynced there). Reads see the unsynced
data, as they see the page cache. Killing this process (SIGKILL) is the power cut: STORE then
holds exactly the data that was fsynced before it, and nothing written later.

Only the ranges written (or zero-filled by a truncation) since the file's last fsync are
written to STORE at the next one, and the contents stay cached here, so a large file that is
fsynced often (a disk image under a loop device, whose flushes are fsyncs of it) costs its
changes, not its size.

The model is strict for file contents and sizes (a file's unsynced writes and truncations
are all lost together) and lenient for the namespace: creating, renaming and deleting files
and directories reach STORE at once, as if every directory were fsynced after each change.
So the power-loss test built on it checks that acknowledged records were fsynced, not that
new files' directory entries were.
"""

import errno
import os
import sys
import threading

from fuse import FUSE, FuseOSError, Operations


class VolatileFS(Operations):
    def __init__(self, store):
        self.store = os.path.realpath(store)
        # Contents by path of files written through the mount: the whole file as the writer
        # sees it, and the ranges not yet in STORE.
        self.dirty = {}
        self.ranges = {}
        self._mutex = threading.Lock()
        self.fds = {}
        self.next_fh = 1

    def _p(self, path):
        return os.path.join(self.store, path.lstrip("/"))

    def _content(self, path):
        """The file as written so far (unsynced data included), loaded on first change."""
        data = self.dirty.get(path)
        if data is None:
            with open(self._p(path), "rb") as f:
                data = bytearray(f.read())
            self.dirty[path] = data
        return data

    # ---- namespace: straight to the store
    def getattr(self, path, fh=None):
        try:
            st = os.lstat(self._p(path))
        except OSError as e:
            raise FuseOSError(e.errno)
        attrs = {k: getattr(st, k) for k in (
            "st_mode", "st_nlink", "st_uid", "st_gid", "st_atime", "st_mtime", "st_ctime")}
        with self._mutex:
            data = self.dirty.get(path)
            attrs["st_size"] = len(data) if data is not None else st.st_size
        return attrs

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._p(path))

    def mkdir(self, path, mode):
        os.mkdir(self._p(path), mode)

    def rmdir(self, path):
        os.rmdir(self._p(path))

    def unlink(self, path):
        with self._mutex:
            self.dirty.pop(path, None)
            self.ranges.pop(path, None)
        os.unlink(self._p(path))

    def rename(self, old, new):
        with self._mutex:
            os.rename(self._p(old), self._p(new))
            self.dirty.pop(new, None)
            self.ranges.pop(new, None)
            if old in self.dirty:
                self.dirty[new] = self.dirty.pop(old)
            if old in self.ranges:
                self.ranges[new] = self.ranges.pop(old)

    def chmod(self, path, mode):
        os.chmod(self._p(path), mode)

    def chown(self, path, uid, gid):
        os.chown(self._p(path), uid, gid)

    def utimens(self, path, times=None):
        os.utime(self._p(path), times)

    def statfs(self, path):
        st = os.statvfs(self._p(path))
        return {k: getattr(st, k) for k in (
            "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files",
            "f_flag", "f_frsize", "f_namemax")}

    def access(self, path, amode):
        if not os.access(self._p(path), amode):
            raise FuseOSError(errno.EACCES)

    # ---- file data: in memory until fsync
    def create(self, path, mode, fi=None):
        fd = os.open(self._p(path), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, mode)
        os.close(fd)
        with self._mutex:
            self.dirty.pop(path, None)
            self.ranges.pop(path, None)
            fh = self.next_fh
            self.next_fh += 1
        return fh

    def open(self, path, flags):
        if flags & os.O_TRUNC:
            self.truncate(path, 0)
        with self._mutex:
            fh = self.next_fh
            self.next_fh += 1
        return fh

    def read(self, path, size, offset, fh):
        with self._mutex:
            data = self.dirty.get(path)
            if data is not None:
                return bytes(data[offset:offset + size])
        with open(self._p(path), "rb") as f:
            f.seek(offset)
            return f.read(size)

    def write(self, path, buf, offset, fh):
        with self._mutex:
            data = self._content(path)
            end = offset + len(buf)
            if len(data) < offset:
                data.extend(b"\0" * (offset - len(data)))
            data[offset:end] = buf
            self.ranges.setdefault(path, []).append((min(offset, len(data)), end))
            return len(buf)

    def truncate(self, path, length, fh=None):
        with self._mutex:
            data = self._content(path)
            old = len(data)
            if old > length:
                del data[length:]
            else:
                data.extend(b"\0" * (length - old))
            # The size itself is written at the next fsync; a grown tail must be zeros there.
            self.ranges.setdefault(path, []).append((min(old, length), length))

    def fsync(self, path, datasync, fh):
        with self._mutex:
            data = self.dirty.get(path)
            ranges = self.ranges.pop(path, None)
            if data is None or ranges is None:
                return 0
            with open(self._p(path), "r+b") as f:
                f.truncate(len(data))
                for start, end in ranges:
                    end = min(end, len(data))
                    if start < end:
                        f.seek(start)
                        f.write(data[start:end])
                f.flush()
                os.fsync(f.fileno())
        return 0

    def fsyncdir(self, path, datasync, fh):
        return 0

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        return 0


def main():
    store, mountpoint = sys.argv[1], sys.argv[2]
    FUSE(VolatileFS(store), mountpoint, foreground=True, nothreads=False, allow_other=False)


if __name__ == "__main__":
    main()
