//! Warm restarts: an informer writes its cache to a file, and a restarted
//! process resumes from it, watching from the file's resourceVersion
//! instead of listing again.
//!
//! A snapshot file is a first line naming the format, a header line (JSON:
//! the cluster, resource and cache shape it was made for, and its
//! resourceVersion), the body (the objects in the compact form a cache holds
//! them in, as [records](crate::cache::compact::binary): read back without
//! parsing JSON), and an end record with the number of objects and the
//! length and FNV-1a hash of the body. It is written and read one object at
//! a time. It is written to a temporary file in the same directory, synced
//! and renamed over the previous one, so a crash leaves either the previous
//! snapshot or the new one whole; it is created readable by its owner only.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use std::sync::atomic::Ordering;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::ReflectorStats;
use super::options::InformerOptions;
use super::telemetry::InformerMetrics;
use crate::cache::compact::binary::{self, Decoder, Encoder};
use crate::cache::compact::{CompactObject, Interner};
use crate::cache::store::{CachedObject, Store};
use crate::vocabulary::duration::go;
use crate::vocabulary::resource::ResourceKey;
use crate::vocabulary::setters;
use crate::vocabulary::shard::{FNV1A_64_OFFSET, fnv1a_64, fnv1a_64_extend};

/// The first line of every snapshot file, with its format version.
const MAGIC: &str = "kube-dynamic-informer snapshot 3\n";

/// Where and how often an informer writes its cache, to resume from it
/// after a restart (`snapshot:` in a config file, `kdi --snapshot-dir`).
///
/// ```
/// use std::time::Duration;
/// use kube_dynamic_informer::informer::{InformerOptions, SnapshotOptions};
///
/// let options = InformerOptions::default()
///     .snapshot(SnapshotOptions::new("/var/cache/my-controller").interval(Duration::from_secs(60)));
/// assert_eq!(options.snapshot.unwrap().interval, Duration::from_secs(60));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "config", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct SnapshotOptions {
    /// The directory of the snapshot files (one per informer), created if
    /// missing. One directory per cluster: a snapshot of another cluster
    /// is refused (and replaced by this cluster's); a cluster set gives each
    /// of its clusters a directory of its own in it (`cluster-NAME`).
    pub dir: PathBuf,
    /// How often a running informer writes its cache (it writes it when it
    /// stops too). Default 5 minutes; zero writes only when it stops.
    #[serde(with = "go")]
    #[cfg_attr(feature = "config", schemars(schema_with = "go::schema"))]
    pub interval: Duration,
    /// Write Secrets and resources marked `sensitive` too. Off by default:
    /// their informers list at every start.
    pub include_sensitive: bool,
    /// A name for the cluster, checked when a snapshot is read. By default
    /// the uid of the `kube-system` namespace, which needs `get` on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
}

impl Default for SnapshotOptions {
    fn default() -> Self {
        Self::new("")
    }
}

impl SnapshotOptions {
    /// Snapshots in `dir`, every 5 minutes.
    #[must_use]
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            interval: Duration::from_secs(300),
            include_sensitive: false,
            cluster: None,
        }
    }

    setters! {
        /// Sets how often a running informer writes its cache.
        interval(interval: Duration) => interval;

        /// Names the cluster.
        cluster(cluster: impl Into<String>) => Some(cluster.into());
    }

    /// Writes Secrets and sensitive resources too.
    #[must_use]
    pub fn include_sensitive(mut self) -> Self {
        self.include_sensitive = true;
        self
    }
}

/// How an informer with [`SnapshotOptions`] started: from its snapshot, or
/// by listing, and why (see
/// [`ReflectorStats::snapshot_start`](super::ReflectorStats::snapshot_start)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotStart {
    /// It served the snapshot as its initial list and watched from its
    /// resourceVersion.
    Resumed {
        /// How old the snapshot was.
        age: Duration,
        /// The objects it held.
        objects: usize,
        /// Its resourceVersion.
        resource_version: String,
    },
    /// It listed.
    Listed {
        /// Why the snapshot was not used.
        reason: SnapshotRefusal,
    },
}

impl fmt::Display for SnapshotStart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotStart::Resumed {
                age,
                objects,
                resource_version,
            } => write!(
                f,
                "resumed from a snapshot {}s old ({objects} objects, resourceVersion {resource_version})",
                age.as_secs()
            ),
            SnapshotStart::Listed { reason } => write!(f, "listed: {reason}"),
        }
    }
}

/// Why an informer did not resume from a snapshot: a reason in
/// [`SnapshotStart::Listed`], not an error (the informer listed instead).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotRefusal {
    /// There was no snapshot file.
    Missing(PathBuf),
    /// The file was made for another cluster, resource or cache shape.
    Mismatched {
        /// The file.
        path: PathBuf,
        /// What differs.
        what: String,
    },
    /// The file is truncated, corrupted, of another format or unreadable.
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The server no longer had the snapshot's resourceVersion (410 Gone):
    /// its history was compacted since.
    TooOld,
    /// The cluster could not be identified, so no snapshot can be matched
    /// to it.
    Unidentified(String),
    /// The objects hold secrets and `include_sensitive` is off.
    Sensitive,
    /// A shard group assigns the informer's ranges at run time.
    ShardGroup,
}

impl fmt::Display for SnapshotRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotRefusal::Missing(path) => write!(f, "no snapshot at {}", path.display()),
            SnapshotRefusal::Mismatched { path, what } => {
                write!(f, "the snapshot at {} was made for {what}", path.display())
            }
            SnapshotRefusal::Corrupt { path, why } => {
                write!(
                    f,
                    "the snapshot at {} cannot be used: {why}",
                    path.display()
                )
            }
            SnapshotRefusal::TooOld => f.write_str(
                "the snapshot is too old: the server answered 410 Gone for its resourceVersion",
            ),
            SnapshotRefusal::Unidentified(why) => write!(
                f,
                "cannot identify the cluster ({why}); set the snapshot's cluster to name it"
            ),
            SnapshotRefusal::Sensitive => f.write_str(
                "a sensitive resource is not written to disk (set includeSensitive to allow it)",
            ),
            SnapshotRefusal::ShardGroup => {
                f.write_str("an informer of a shard group does not use snapshots")
            }
        }
    }
}

impl SnapshotRefusal {
    /// The reason in one camelCase word: `missing`, `mismatched`,
    /// `corrupt`, `tooOld`, `unidentified`, `sensitive` or `shardGroup`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            SnapshotRefusal::Missing(_) => "missing",
            SnapshotRefusal::Mismatched { .. } => "mismatched",
            SnapshotRefusal::Corrupt { .. } => "corrupt",
            SnapshotRefusal::TooOld => "tooOld",
            SnapshotRefusal::Unidentified(_) => "unidentified",
            SnapshotRefusal::Sensitive => "sensitive",
            SnapshotRefusal::ShardGroup => "shardGroup",
        }
    }
}

/// What a snapshot must have been made for to be used.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Identity {
    pub(crate) cluster: String,
    pub(crate) resource: String,
    /// A hash of the options that shape the cache.
    pub(crate) shape: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    #[serde(flatten)]
    identity: Identity,
    resource_version: String,
    written_at_ms: u64,
}

/// The end record's payload (JSON): what the body holds, to check that it
/// is whole.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Trailer {
    objects: usize,
    body_bytes: u64,
    body_hash: String,
}

/// The tag of the end record.
const END: u8 = b'e';

/// A snapshot as read (tests).
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) resource_version: String,
    pub(crate) objects: Vec<kube_core::DynamicObject>,
}

/// A snapshot checked whole and made for its target, read page by page so
/// that it is never held whole in memory beside the objects read from it.
pub(crate) struct Opened {
    target: Target,
    body: Body,
    decoder: Decoder,
    left: usize,
    pub(crate) resource_version: String,
    /// How many objects it holds.
    pub(crate) objects: usize,
    pub(crate) age: Duration,
}

impl Opened {
    /// The next (at most) `size` objects; `None` after the last one.
    pub(crate) fn page(
        &mut self,
        size: usize,
    ) -> Result<Option<Vec<CompactObject>>, SnapshotRefusal> {
        if self.left == 0 {
            return Ok(None);
        }
        let mut page = Vec::with_capacity(size.min(self.left));
        while page.len() < size && self.left > 0 {
            let tag = self.body.next().map_err(|why| self.target.corrupt(why))?;
            let Some(tag) = tag.filter(|tag| *tag != END) else {
                return Err(self.target.corrupt("it changed while it was read".into()));
            };
            let read = self
                .decoder
                .record(tag, &self.body.payload)
                .map_err(|why| {
                    self.target
                        .corrupt(format!("object {}: {why}", self.objects - self.left + 1))
                })?;
            if let Some(object) = read {
                page.push(object);
                self.left -= 1;
            }
        }
        Ok(Some(page))
    }

    /// What the objects read share (their keys and trees), for the cache
    /// that holds them to build its next objects with.
    pub(crate) fn into_interner(self) -> Interner {
        self.decoder.into_interner()
    }
}

/// The records of a snapshot's body, read one at a time.
struct Body {
    file: std::io::BufReader<std::fs::File>,
    /// Bytes of the file not read yet: no record can be longer.
    left: u64,
    /// The last record's payload.
    payload: Vec<u8>,
    /// The bytes read so far, hashed as written.
    hash: u64,
    bytes: u64,
}

impl Body {
    /// Reads the next record into `payload` and returns its tag; `None` at
    /// the end of the file.
    fn next(&mut self) -> Result<Option<u8>, String> {
        use std::io::Read;
        let reading = |e: std::io::Error| format!("reading it: {e}");
        let mut byte = [0u8];
        if self.file.read(&mut byte).map_err(reading)? == 0 {
            return Ok(None);
        }
        let tag = byte[0];
        // Hashed as written: the tag, the length's bytes, the payload (the
        // end record excepted, which holds the hash).
        let hashed = tag != END;
        let mut head = 1u64;
        if hashed {
            self.hash = fnv1a_64_extend(self.hash, &byte);
        }
        let len = binary::read_varint(|| {
            self.file
                .read_exact(&mut byte)
                .map_err(|_| "truncated in a record".to_owned())?;
            head += 1;
            if hashed {
                self.hash = fnv1a_64_extend(self.hash, &byte);
            }
            Ok(byte[0])
        })?;
        let total = head + len;
        if total > self.left {
            return Err("truncated: a record goes past its end".into());
        }
        self.left -= total;
        self.payload.clear();
        self.payload
            .resize(usize::try_from(len).map_err(|_| "a record too long")?, 0);
        self.file
            .read_exact(&mut self.payload)
            .map_err(|_| "truncated in a record")?;
        if hashed {
            self.hash = fnv1a_64_extend(self.hash, &self.payload);
            self.bytes += total;
        }
        Ok(Some(tag))
    }
}

/// Where one informer's snapshot lives, and what it is made for.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub(crate) path: PathBuf,
    pub(crate) identity: Identity,
}

impl Target {
    /// The target of an informer of `resource` with `options` in `cluster`,
    /// or why it has none.
    pub(crate) fn new(
        snapshot: &SnapshotOptions,
        resource: &ResourceKey,
        options: &InformerOptions,
        cluster: String,
    ) -> Self {
        let shape = shape(options);
        let resource_text = format!("{resource}");
        let file = format!(
            "{}-{:016x}.snapshot",
            resource_text.replace(['/', '\\'], "_"),
            fnv1a_64(shape.as_bytes())
        );
        Self {
            path: snapshot.dir.join(file),
            identity: Identity {
                cluster,
                resource: resource_text,
                shape,
            },
        }
    }

    /// Opens the snapshot and checks that it is whole and made for this
    /// target: a first pass over the file that hashes its body without
    /// decoding an object. [`Opened::pages`] then decodes it.
    pub(crate) fn open(&self) -> Result<Opened, SnapshotRefusal> {
        use std::io::Seek;
        let file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SnapshotRefusal::Missing(self.path.clone()));
            }
            Err(e) => return Err(self.corrupt(format!("opening it: {e}"))),
        };
        let mut lines = std::io::BufReader::new(file);
        let mut line = Vec::new();
        if !self.next_line(&mut lines, &mut line)? || line != MAGIC.as_bytes() {
            return Err(self.corrupt("not a snapshot of this format".into()));
        }
        if !self.next_line(&mut lines, &mut line)? {
            return Err(self.corrupt("truncated in its header".into()));
        }
        let header: Header =
            serde_json::from_slice(&line).map_err(|e| self.corrupt(format!("its header: {e}")))?;
        if header.identity != self.identity {
            return Err(self.mismatch(&header.identity));
        }
        let body_start = lines.stream_position().map_err(|e| self.unreadable(&e))?;
        let file_len = lines
            .get_ref()
            .metadata()
            .map_err(|e| self.unreadable(&e))?
            .len();
        let mut body = Body {
            file: lines,
            left: file_len.saturating_sub(body_start),
            payload: Vec::new(),
            hash: FNV1A_64_OFFSET,
            bytes: 0,
        };
        let mut objects = 0usize;
        let trailer: Trailer = loop {
            match body.next().map_err(|why| self.corrupt(why))? {
                None => return Err(self.corrupt("truncated: no end record".into())),
                Some(END) => {
                    break serde_json::from_slice(&body.payload)
                        .map_err(|e| self.corrupt(format!("its end record: {e}")))?;
                }
                Some(binary::OBJECT) => objects += 1,
                Some(_) => {}
            }
        };
        if body.left != 0 {
            return Err(self.corrupt("bytes after its end record".into()));
        }
        if trailer.body_bytes != body.bytes || trailer.body_hash != format!("{:016x}", body.hash) {
            return Err(self.corrupt("its body does not match its checksum".into()));
        }
        if trailer.objects != objects {
            return Err(self.corrupt(format!(
                "it holds {objects} objects, its end record says {}",
                trailer.objects
            )));
        }
        body.file
            .seek(std::io::SeekFrom::Start(body_start))
            .map_err(|e| self.unreadable(&e))?;
        body.left = file_len.saturating_sub(body_start);
        let written = UNIX_EPOCH + Duration::from_millis(header.written_at_ms);
        Ok(Opened {
            target: self.clone(),
            body,
            decoder: Decoder::default(),
            left: objects,
            resource_version: header.resource_version,
            objects,
            age: SystemTime::now()
                .duration_since(written)
                .unwrap_or_default(),
        })
    }

    /// Reads a line into `line`; false at the end of the file or on a last
    /// line without its newline.
    fn next_line(
        &self,
        lines: &mut impl std::io::BufRead,
        line: &mut Vec<u8>,
    ) -> Result<bool, SnapshotRefusal> {
        line.clear();
        let n = lines
            .read_until(b'\n', line)
            .map_err(|e| self.unreadable(&e))?;
        Ok(n > 0 && line.last() == Some(&b'\n'))
    }

    fn unreadable(&self, e: &std::io::Error) -> SnapshotRefusal {
        self.corrupt(format!("reading it: {e}"))
    }

    fn corrupt(&self, why: String) -> SnapshotRefusal {
        SnapshotRefusal::Corrupt {
            path: self.path.clone(),
            why,
        }
    }

    /// Reads the whole snapshot at once (tests).
    #[cfg(test)]
    pub(crate) fn load(&self) -> Result<Loaded, SnapshotRefusal> {
        let mut opened = self.open()?;
        let mut objects = Vec::new();
        while let Some(page) = opened.page(usize::MAX)? {
            objects.extend(page.iter().map(CompactObject::to_object));
        }
        Ok(Loaded {
            resource_version: opened.resource_version,
            objects,
        })
    }

    fn mismatch(&self, found: &Identity) -> SnapshotRefusal {
        let what = if found.cluster != self.identity.cluster {
            format!("cluster {}", found.cluster)
        } else if found.resource != self.identity.resource {
            format!("resource {}", found.resource)
        } else {
            "other options (namespaces, selectors, transform, projection or shard)".to_owned()
        };
        SnapshotRefusal::Mismatched {
            path: self.path.clone(),
            what,
        }
    }

    /// Writes `objects` at `resource_version`, one at a time: to a
    /// temporary file, synced, then renamed over the previous snapshot.
    pub(crate) fn write(
        &self,
        resource_version: &str,
        objects: &[CachedObject],
    ) -> std::io::Result<()> {
        let header = Header {
            identity: self.identity.clone(),
            resource_version: resource_version.to_owned(),
            written_at_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(
            ".{}.tmp-{}",
            self.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            std::process::id()
        ));
        let mut file = std::io::BufWriter::new(owner_only().open(&tmp)?);
        file.write_all(MAGIC.as_bytes())?;
        serde_json::to_writer(&mut file, &header)?;
        file.write_all(b"\n")?;
        let (mut hash, mut bytes, mut records) = (FNV1A_64_OFFSET, 0u64, Vec::new());
        // The objects of a cache in compact storage are written as it holds
        // them; those of a cache holding decoded objects are built here, in
        // the compact form, with tables of their own.
        let verbatim = objects
            .first()
            .and_then(CachedObject::compact)
            .is_some_and(|first| {
                let encoder = Encoder::for_objects_like(first);
                objects
                    .iter()
                    .all(|o| o.compact().is_some_and(|c| encoder.takes(c)))
            });
        let mut interner = Interner::new();
        let mut encoder = None;
        for object in objects {
            let built;
            let compact = match object.compact() {
                Some(compact) if verbatim => compact,
                _ => {
                    built = CompactObject::from_object(&object.object(), &mut interner);
                    &built
                }
            };
            records.clear();
            encoder
                .get_or_insert_with(|| Encoder::for_objects_like(compact))
                .object(compact, &mut records);
            hash = fnv1a_64_extend(hash, &records);
            bytes += records.len() as u64;
            file.write_all(&records)?;
        }
        records.clear();
        let trailer = serde_json::to_vec(&Trailer {
            objects: objects.len(),
            body_bytes: bytes,
            body_hash: format!("{hash:016x}"),
        })?;
        binary::write_record(&mut records, END, &trailer);
        file.write_all(&records)?;
        let file = file
            .into_inner()
            .map_err(std::io::IntoInnerError::into_error)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, &self.path)?;
        // The rename itself is durable once the directory is synced.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

/// The writing side of an informer's snapshots: periodic writes from the
/// dispatcher, one at a time, and the last one when it stops.
#[derive(Default)]
pub(crate) struct Writes {
    /// When the next periodic write is due; `None`: at the first chance
    /// (the first resourceVersion after the first sync).
    next: Mutex<Option<Instant>>,
    /// The write in progress.
    running: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Writes {
    /// Called with each resourceVersion the cache reaches (the cache then
    /// holds exactly the objects at it): starts a write when one is due.
    pub(crate) fn reached(
        &self,
        options: &SnapshotOptions,
        stats: &Arc<ReflectorStats>,
        metrics: &InformerMetrics,
        store: &Store,
        resource_version: &str,
    ) {
        if options.interval.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut next = self.next.lock();
        if next.is_some_and(|t| now < t) {
            return;
        }
        let mut running = self.running.lock();
        if running.as_ref().is_some_and(|t| !t.is_finished()) {
            return;
        }
        let Some(write) = Self::capture(stats, metrics, store, resource_version) else {
            return;
        };
        *next = Some(now + options.interval);
        *running = Some(tokio::task::spawn_blocking(write));
    }

    /// When the informer stops: waits for a write in progress, then writes
    /// the cache as it is.
    pub(crate) async fn last(
        &self,
        stats: &Arc<ReflectorStats>,
        metrics: &InformerMetrics,
        store: &Store,
    ) {
        let running = self.running.lock().take();
        if let Some(task) = running {
            let _ = task.await;
        }
        let Some(rv) = store.resource_version() else {
            return;
        };
        if let Some(write) = Self::capture(stats, metrics, store, &rv) {
            let _ = tokio::task::spawn_blocking(write).await;
        }
    }

    /// The write of the cache at `resource_version`, when the informer has
    /// a target and the cache holds a whole state (not in a relist).
    fn capture(
        stats: &Arc<ReflectorStats>,
        metrics: &InformerMetrics,
        store: &Store,
        resource_version: &str,
    ) -> Option<impl FnOnce() + Send + 'static> {
        let target = stats.snapshot_target.lock().clone()?;
        if store.sync_point().relisting {
            return None;
        }
        let objects = store.list_all();
        let rv = resource_version.to_owned();
        let stats = stats.clone();
        let metrics = metrics.clone();
        Some(move || match target.write(&rv, &objects) {
            Ok(()) => {
                stats.snapshots_written.fetch_add(1, Ordering::Relaxed);
                metrics.snapshot_written(true);
                tracing::debug!(path = %target.path.display(), objects = objects.len(), resource_version = %rv, "snapshot written");
            }
            Err(e) => {
                stats.snapshot_write_errors.fetch_add(1, Ordering::Relaxed);
                metrics.snapshot_written(false);
                tracing::warn!(path = %target.path.display(), error = %e, "writing a snapshot failed");
            }
        })
    }
}

/// Options that create a new file readable and writable by its owner only.
fn owner_only() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// What of `options` shapes the cache, as one hash.
fn shape(options: &InformerOptions) -> String {
    let shaping = serde_json::json!({
        "namespaces": options.watch.namespaces,
        "labelSelector": options.watch.label_selector,
        "fieldSelector": options.watch.field_selector,
        "stripManagedFields": options.cache.strip_managed_fields,
        "projection": options.cache.projection,
        "transform": options.cache.transform.as_ref().map(|t| t.name().to_owned()),
        "metadataOnly": options.watch.metadata_only,
        "shard": options.cache.shard,
        "shardKey": options.cache.shard_key,
    });
    format!("{:016x}", fnv1a_64(shaping.to_string().as_bytes()))
}

#[cfg(test)]
mod tests;
