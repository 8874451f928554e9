//! One cache flush for several files: whether an fdatasync of one file makes the pages already
//! written of another file on the same disk durable, and the write of those pages without a
//! flush (`sync_file_range`).
//!
//! An fdatasync ends with a flush of the disk's volatile write cache, which covers every write
//! the disk completed before it, whichever file it belonged to. ext4 issues that flush itself
//! on an fdatasync of a file with no metadata to commit (the inode's last data-relevant
//! transaction already committed, or no journal), and for a journalled file through the
//! journal commit. So the group commit (`durable.rs`) writes the pages of the logs of a round
//! whose bytes need no metadata with `sync_file_range`, then fdatasyncs one such log per disk
//! that has nothing to commit. Not with `data=journal` (file data is then durable only through
//! the journal), nor on other file systems, whose fdatasync this does not rely on: there each
//! file keeps its own fdatasync.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::sync::{Mutex, OnceLock};

const EXT4_SUPER_MAGIC: i64 = 0xEF53;

/// The device of `file` when an fdatasync of any file on it flushes the disk's cache for all
/// of them; None when each file must have its own fdatasync.
pub(super) fn shared_flush_device(file: &File) -> Option<u64> {
    let dev = file.metadata().ok()?.dev();
    // SAFETY: fstatfs writes a `statfs` for the open descriptor into the zeroed struct.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } != 0 {
        return None;
    }
    (st.f_type as i64 == EXT4_SUPER_MAGIC && !ext4_journals_data(dev)).then_some(dev)
}

/// Whether the ext4 file system on `dev` is mounted `data=journal`: file data then goes through
/// the journal, and only its commit, not a cache flush, makes written pages durable. Read once
/// per device from `/proc/self/mountinfo`; unreadable counts as journalled (no sharing).
fn ext4_journals_data(dev: u64) -> bool {
    static SEEN: OnceLock<Mutex<HashMap<u64, bool>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    *seen.entry(dev).or_insert_with(|| {
        std::fs::read_to_string("/proc/self/mountinfo")
            .map(|text| mount_journals_data(&text, libc::major(dev), libc::minor(dev)))
            .unwrap_or(true)
    })
}

/// `mountinfo` lines: `id parent major:minor root mountpoint options [tags] - type source
/// super-options`; the data mode is a super option.
fn mount_journals_data(mountinfo: &str, major: u32, minor: u32) -> bool {
    let wanted = format!("{major}:{minor}");
    mountinfo.lines().any(|line| {
        let mut fields = line.split(' ');
        if fields.nth(2) != Some(wanted.as_str()) {
            return false;
        }
        let mut after = line.split(" - ").nth(1).unwrap_or("").split(' ');
        let super_options = after.nth(2).unwrap_or("");
        super_options.split(',').any(|o| o == "data=journal")
    })
}

/// Writes the dirty pages of `file`'s first `len` bytes and waits until the disk has them, with
/// no cache flush and no metadata: durable only once an fdatasync of a file on the same device
/// (see [`shared_flush_device`]) has returned after this.
pub(super) fn write_pages(file: &File, len: u64) -> std::io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
        | libc::SYNC_FILE_RANGE_WRITE
        | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    let len = libc::off64_t::try_from(len).unwrap_or(libc::off64_t::MAX);
    // SAFETY: a plain system call on an open descriptor.
    if unsafe { libc::sync_file_range(file.as_raw_fd(), 0, len, flags) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,errors=remount-ro
30 22 254:16 / /data rw,noatime shared:9 - ext4 /dev/vdb rw,data=journal
31 22 0:42 / /tmp rw shared:10 - tmpfs tmpfs rw,size=100k
";

    #[test]
    fn the_data_mode_is_read_from_the_devices_mount() {
        assert!(!mount_journals_data(MOUNTINFO, 254, 0));
        assert!(mount_journals_data(MOUNTINFO, 254, 16));
        assert!(!mount_journals_data(MOUNTINFO, 0, 42));
        // A device with no mount line is not journalled by this reading; the caller only asks
        // for a device that a file it holds open lives on.
        assert!(!mount_journals_data(MOUNTINFO, 8, 1));
    }

    #[test]
    fn pages_are_written_without_error_and_empty_ranges_are_skipped() {
        use std::io::Write;
        let mut f = tempfile::tempfile().expect("tempfile");
        f.write_all(&[7u8; 10_000]).expect("write");
        write_pages(&f, 10_000).expect("sync_file_range");
        write_pages(&f, 0).expect("nothing to write");
    }
}
