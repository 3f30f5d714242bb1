//! A broadcasting consumer's local offset file: `<dir>/<group>/offsets.json`, in the format of
//! Java's `offsets.json` (`proto::body::OffsetTable`, `remoting-protocol.md` §8.1), so files a
//! Java consumer left behind load too.
//!
//! The path leaves out Java's `<clientId>` level on purpose: the client id changes with every
//! run, and a restarted member must find the file its previous run wrote.
//!
//! The whole table is written each time, atomically: a temporary file in the same directory,
//! fsync, rename over `offsets.json`, fsync of the directory. A crash leaves the old table or
//! the new one, never a torn file, so Java's `.bak` copy is not needed (it is still read, as a
//! fallback, when only a Java consumer's `.bak` survives).

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
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

/// One group's offset file.
#[derive(Clone, Debug)]
pub(crate) struct OffsetFile {
    dir: PathBuf,
}

impl OffsetFile {
    /// The file of `group` under `dir`. The group becomes a directory name, so it must be one
    /// path component: RocketMQ's group names (`[%|a-zA-Z0-9_-]+`) always are.
    pub(crate) fn new(dir: &Path, group: &str) -> Result<Self, ConfigError> {
        let single = Path::new(group).components().count() == 1;
        if !single || group.contains(['/', '\\']) || group == "." || group == ".." {
            return Err(ConfigError(format!(
                "group {group:?} cannot name an offset directory"
            )));
        }
        Ok(Self {
            dir: dir.join(group),
        })
    }

    /// `offsets.json`.
    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join("offsets.json")
    }

    /// The stored table: `offsets.json`, else Java's `offsets.json.bak`; empty when neither
    /// exists. A file that exists but does not decode is an error (starting over from
    /// `consume_from` would silently skip or repeat messages).
    pub(crate) fn load(&self) -> Result<Vec<(MessageQueue, i64)>, ConfigError> {
        let main = self.path();
        let backup = self.dir.join("offsets.json.bak");
        for path in [&main, &backup] {
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
        let file = OffsetFile::new(&dir, "g").expect("a plain group name");
        assert_eq!(file.load().expect("no file is an empty table"), Vec::new());
        let a = MessageQueue::new("T", "broker-a", 0);
        let b = MessageQueue::new("T", "broker-a", 1);
        file.store(&[(a.clone(), 5), (b.clone(), 7)])
            .expect("the first write");
        file.store(&[(a.clone(), 9)]).expect("the second write");
        assert_eq!(file.load().expect("the table decodes"), vec![(a, 9)]);
        assert_eq!(file.path(), dir.join("g").join("offsets.json"));
        let litter: Vec<_> = fs::read_dir(dir.join("g"))
            .expect("the group directory exists")
            .filter_map(Result::ok)
            .filter(|e| e.file_name() != "offsets.json")
            .collect();
        assert!(litter.is_empty(), "temporary files left: {litter:?}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn loads_a_java_file_and_falls_back_to_its_backup() {
        let dir = scratch("java");
        let file = OffsetFile::new(&dir, "g").expect("a plain group name");
        fs::create_dir_all(dir.join("g")).expect("create the group directory");
        let java = "{\n\t\"offsetTable\":{{\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"queueId\":3,\n\t\t\t\"topic\":\"T\"\n\t\t}:42\n\t}\n}";
        fs::write(dir.join("g").join("offsets.json.bak"), java).expect("write the backup");
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
        for group in ["a/b", "..", ".", "a\\b", "/abs"] {
            assert!(
                OffsetFile::new(Path::new("/tmp"), group).is_err(),
                "{group}"
            );
        }
        assert!(OffsetFile::new(Path::new("/tmp"), "%RETRY%g|x-1_2").is_ok());
    }

    #[test]
    fn default_dir_is_javas() {
        assert!(default_dir().ends_with(".rocketmq_offsets"));
    }
}
