//! A broadcasting consumer's local offset file: `<dir>/<ip>@<instance>/<group>/offsets.json`, in
//! the format of Java's `offsets.json` (`proto::body::OffsetTable`, `remoting-protocol.md` §8.1),
//! so files a Java consumer left behind load too.
//!
//! The path is Java's (`LocalFileOffsetStore`: `<dir>/<clientId>/<group>/offsets.json`), with
//! the instance name `DEFAULT` unless one is set: a broadcasting Java consumer keeps `DEFAULT`
//! (`DefaultMQPushConsumerImpl.start` changes it to the pid only for clustering), so its
//! `<ip>@DEFAULT` is stable across restarts and ours is too. Our client id, which carries a
//! per-run instance name when none is set, is not used here. Before this keying the file was
//! `<dir>/<group>/offsets.json`; it is still read when the keyed one does not exist.
//!
//! Two live consumers on one file would replace each other's table, and a restarted one could
//! resume from the other's higher offsets and skip messages: the file's directory holds an
//! exclusive lock (`offsets.lock`) for as long as the consumer runs, and a second consumer of
//! the same file, in this process or another, fails to start with an error saying so.
//!
//! The whole table is written each time, atomically: a temporary file in the same directory,
//! fsync, rename over `offsets.json`, fsync of the directory. A crash leaves the old table or
//! the new one, never a torn file, so Java's `.bak` copy is not needed (it is still read, as a
//! fallback, when only a Java consumer's `.bak` survives).

use std::fs::{self, File, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use consumer_core::{ConfigError, MessageQueue};
use proto::body::OffsetTable;

/// The default directory, Java's: `$HOME/.rocketmq_offsets`, or under the system's temporary
/// directory when there is no home.
pub(crate) fn default_dir() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map_or_else(std::env::temp_dir, PathBuf::from)
        .join(".rocketmq_offsets")
}

/// Distinguishes the temporary files of writers in one process (two consumers of a group
/// pointed at one directory must not write into each other's temporary file).
static WRITES: AtomicU64 = AtomicU64::new(0);

/// The instance name of the file's path when none is set (Java's default).
pub(crate) const DEFAULT_INSTANCE: &str = "DEFAULT";

/// One group's offset file, locked for this consumer.
#[derive(Clone, Debug)]
pub(crate) struct OffsetFile {
    dir: PathBuf,
    /// Where this client kept the file before it was keyed by client (`<dir>/<group>`).
    legacy: PathBuf,
    /// Held (locked) while any clone lives: the consumer's whole run.
    _lock: Arc<File>,
}

impl OffsetFile {
    /// The file of `group` for client `client` (`ip@instance`) under `dir`, locked. Each becomes
    /// a directory name, so each must be one path component: RocketMQ's group names
    /// (`[%|a-zA-Z0-9_-]+`) always are.
    pub(crate) fn open(dir: &Path, client: &str, group: &str) -> Result<Self, ConfigError> {
        for (what, name) in [("group", group), ("client id", client)] {
            let single = Path::new(name).components().count() == 1;
            if !single || name.contains(['/', '\\']) || name == "." || name == ".." {
                return Err(ConfigError(format!(
                    "{what} {name:?} cannot name an offset directory"
                )));
            }
        }
        let keyed = dir.join(client).join(group);
        fs::create_dir_all(&keyed).map_err(|e| {
            ConfigError(format!(
                "cannot create the broadcasting offset directory {}: {e}",
                keyed.display()
            ))
        })?;
        let lock_path = keyed.join("offsets.lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| ConfigError(format!("cannot open {}: {e}", lock_path.display())))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(ConfigError(format!(
                    "the broadcasting offsets in {} are in use by another live consumer of group \
                     {group} on this host; give each its own instance name or offset directory",
                    keyed.display()
                )));
            }
            Err(TryLockError::Error(e)) => {
                return Err(ConfigError(format!(
                    "cannot lock {}: {e}",
                    lock_path.display()
                )));
            }
        }
        Ok(Self {
            dir: keyed,
            legacy: dir.join(group),
            _lock: Arc::new(lock),
        })
    }

    /// `offsets.json`.
    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join("offsets.json")
    }

    /// The stored table: `offsets.json`, else Java's `offsets.json.bak`, else the file of the
    /// layout before client keying; empty when none exists. A file that exists but does not
    /// decode is an error (starting over from `consume_from` would silently skip or repeat
    /// messages).
    pub(crate) fn load(&self) -> Result<Vec<(MessageQueue, i64)>, ConfigError> {
        let main = self.path();
        let backup = self.dir.join("offsets.json.bak");
        let legacy = self.legacy.join("offsets.json");
        for path in [&main, &backup, &legacy] {
            let content = match fs::read(path) {
                Ok(content) => content,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(load_error(path, &e)),
            };
            // Java leaves an empty file when a write was cut short; its backup is then current.
            if content.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let table = OffsetTable::decode(&content).map_err(|e| load_error(path, &e))?;
            return Ok(table.offset_table.into_iter().collect());
        }
        Ok(Vec::new())
    }

    /// Replaces the stored table with `offsets`.
    ///
    /// This is blocking `std::fs` I/O called from the driver task: the file is small (one
    /// line per queue), written at most once per `persist_interval` (5 s) and at shutdown, so
    /// the fsyncs cost milliseconds, not enough to justify a writer thread.
    pub(crate) fn store(&self, offsets: &[(MessageQueue, i64)]) -> io::Result<()> {
        let table = OffsetTable {
            offset_table: offsets.iter().cloned().collect(),
        };
        fs::create_dir_all(&self.dir)?;
        let n = WRITES.fetch_add(1, Ordering::Relaxed);
        let tmp = self
            .dir
            .join(format!("offsets.json.{}.{n}.tmp", std::process::id()));
        let written = (|| {
            let mut file = File::create(&tmp)?;
            file.write_all(&table.encode())?;
            file.sync_all()?;
            fs::rename(&tmp, self.path())
        })();
        if written.is_err() {
            // Best effort: a leftover temporary file is only litter.
            let _ = fs::remove_file(&tmp);
            return written;
        }
        sync_dir(&self.dir)
    }
}

fn load_error(path: &Path, error: &dyn std::fmt::Display) -> ConfigError {
    ConfigError(format!(
        "cannot read the broadcasting offsets in {}: {error}",
        path.display()
    ))
}

/// Makes the rename durable: on Unix a directory entry reaches the disk with the directory's
/// fsync. Other systems cannot open a directory as a file; there the rename is what we have.
fn sync_dir(dir: &Path) -> io::Result<()> {
    if cfg!(unix) {
        File::open(dir)?.sync_all()
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "rmq-offset-file-{name}-{}-{}",
            std::process::id(),
            WRITES.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn stores_and_loads_the_whole_table() {
        let dir = scratch("roundtrip");
        let file = OffsetFile::open(&dir, "10.0.0.1@DEFAULT", "g").expect("a plain group name");
        assert_eq!(file.load().expect("no file is an empty table"), Vec::new());
        let a = MessageQueue::new("T", "broker-a", 0);
        let b = MessageQueue::new("T", "broker-a", 1);
        file.store(&[(a.clone(), 5), (b.clone(), 7)])
            .expect("the first write");
        file.store(&[(a.clone(), 9)]).expect("the second write");
        assert_eq!(file.load().expect("the table decodes"), vec![(a, 9)]);
        let keyed = dir.join("10.0.0.1@DEFAULT").join("g");
        assert_eq!(file.path(), keyed.join("offsets.json"));
        let litter: Vec<_> = fs::read_dir(&keyed)
            .expect("the group directory exists")
            .filter_map(Result::ok)
            .filter(|e| e.file_name() != "offsets.json" && e.file_name() != "offsets.lock")
            .collect();
        assert!(litter.is_empty(), "temporary files left: {litter:?}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn loads_a_java_file_and_falls_back_to_its_backup() {
        let dir = scratch("java");
        let file = OffsetFile::open(&dir, "10.0.0.1@DEFAULT", "g").expect("a plain group name");
        let java = "{\n\t\"offsetTable\":{{\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"queueId\":3,\n\t\t\t\"topic\":\"T\"\n\t\t}:42\n\t}\n}";
        let keyed = dir.join("10.0.0.1@DEFAULT").join("g");
        fs::write(keyed.join("offsets.json.bak"), java).expect("write the backup");
        fs::write(file.path(), "").expect("write an empty main file");
        assert_eq!(
            file.load().expect("the backup decodes"),
            vec![(MessageQueue::new("T", "broker-a", 3), 42)]
        );
        fs::write(file.path(), "{not json").expect("write a corrupt main file");
        let error = file.load().expect_err("a corrupt file is an error");
        assert!(error.0.contains("offsets.json"), "{error}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn refuses_groups_that_are_not_one_path_component() {
        let dir = scratch("names");
        for name in ["a/b", "..", ".", "a\\b", "/abs"] {
            assert!(
                OffsetFile::open(&dir, "ip@DEFAULT", name).is_err(),
                "{name}"
            );
            assert!(OffsetFile::open(&dir, name, "g").is_err(), "{name}");
        }
        assert!(OffsetFile::open(&dir, "ip@DEFAULT", "%RETRY%g|x-1_2").is_ok());
        let _ = fs::remove_dir_all(&dir);
    }

    /// A second consumer of the same file fails to open it while the first holds it, and
    /// opens it once the first is gone.
    #[test]
    fn a_second_live_consumer_of_one_file_is_refused() {
        let dir = scratch("lock");
        let first = OffsetFile::open(&dir, "ip@DEFAULT", "g").expect("the first opens it");
        let clone = first.clone();
        let error = OffsetFile::open(&dir, "ip@DEFAULT", "g").expect_err("the second is refused");
        assert!(
            error.0.contains("in use by another live consumer"),
            "{error}"
        );
        OffsetFile::open(&dir, "ip@other", "g").expect("another instance name has its own file");
        drop(first);
        assert!(
            OffsetFile::open(&dir, "ip@DEFAULT", "g").is_err(),
            "a clone still holds the lock"
        );
        drop(clone);
        OffsetFile::open(&dir, "ip@DEFAULT", "g").expect("free again");
        let _ = fs::remove_dir_all(&dir);
    }

    /// The file written before client keying (`<dir>/<group>/offsets.json`) is read when the
    /// keyed one does not exist yet, and the keyed one wins once written.
    #[test]
    fn reads_the_file_of_the_layout_before_client_keying() {
        let dir = scratch("legacy");
        fs::create_dir_all(dir.join("g")).expect("create the old group directory");
        let mq = MessageQueue::new("T", "broker-a", 1);
        let old = OffsetTable {
            offset_table: [(mq.clone(), 12)].into_iter().collect(),
        };
        fs::write(dir.join("g").join("offsets.json"), old.encode()).expect("write the old file");
        let file = OffsetFile::open(&dir, "ip@DEFAULT", "g").expect("opens");
        assert_eq!(file.load().expect("decodes"), vec![(mq.clone(), 12)]);
        file.store(&[(mq.clone(), 20)]).expect("stores");
        assert_eq!(file.load().expect("decodes"), vec![(mq, 20)]);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn default_dir_is_javas() {
        assert!(default_dir().ends_with(".rocketmq_offsets"));
    }
}
