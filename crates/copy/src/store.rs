//! Where a backup lives: a directory, or a prefix in an object store (`s3://`, `gs://`,
//! `az://`) through the object_store crate, credentials found the way each cloud's SDK finds
//! them (environment, profile, instance metadata).
//!
//! A file is complete or absent, never partial: a segment is written to a staging file first
//! and published whole (on a disk a rename; in an object store, where a rename is a copy and a
//! delete, one PUT or a completed multipart upload). The manifest is written with a condition
//! (absent, or unchanged since read), so two backups into one location cannot both write it.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{
    ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion, WriteMultipart,
};
use tokio::io::AsyncReadExt;

use crate::manifest::MANIFEST;
use crate::Error;

/// A staged file up to this size goes up in one PUT; a larger one in parts of this size.
const PART_BYTES: usize = 16 << 20;

/// Where a segment is written before it is published: inside a local backup (a rename within
/// one file system is atomic), or a temporary directory for an object store.
const STAGING_DIR: &str = ".krec-staging";

/// A backup's location.
#[derive(Clone, Debug)]
pub(crate) struct Store {
    objects: Arc<dyn ObjectStore>,
    /// The backup's prefix inside `objects` (empty for a directory).
    root: ObjectPath,
    /// The location as given, for messages.
    location: String,
    /// The directory of a local backup.
    local: Option<PathBuf>,
    /// Where segments are written before they are published; only when opened to write.
    staging: Option<PathBuf>,
    /// A directory's lock, held while open to write.
    lock: Option<Arc<Lock>>,
}

/// The version of the manifest a backup read, which its next write must still find.
#[derive(Clone, Debug)]
pub(crate) struct ManifestVersion(UpdateVersion);

impl Store {
    /// Opens `location` to read a backup: a directory, `file://` URL, or object store URL.
    pub(crate) async fn open(location: &str) -> Result<Self, Error> {
        let scheme = location.split_once("://").map(|(scheme, _)| scheme);
        match scheme {
            None | Some("file") => Self::open_dir(location),
            Some(scheme) => Self::open_remote(location, scheme),
        }
    }

    /// Opens `location` to write a backup (a directory is made if missing) with a staging
    /// directory of its own. A directory is locked while the store is open: a second backup
    /// into it at the same time is refused at once.
    pub(crate) async fn open_to_write(location: &str) -> Result<Self, Error> {
        let local = location.split_once("://").is_none() || location.starts_with("file://");
        if local {
            let dir = location.strip_prefix("file://").unwrap_or(location);
            let staging = Path::new(dir).join(STAGING_DIR);
            std::fs::create_dir_all(&staging).map_err(|error| Error::Backup {
                file: staging.display().to_string(),
                position: None,
                detail: format!("cannot make the backup's directory: {error}"),
            })?;
            let mut store = Self::open_dir(location)?;
            store.lock = Some(Arc::new(lock(&staging, location)?));
            store.staging = Some(staging);
            return Ok(store);
        }
        let mut store = Self::open(location).await?;
        let staging = std::env::temp_dir().join(format!("krec-backup-{}", staging_name()));
        std::fs::create_dir_all(&staging).map_err(|error| Error::Backup {
            file: staging.display().to_string(),
            position: None,
            detail: format!("cannot make a staging directory: {error}"),
        })?;
        store.staging = Some(staging);
        Ok(store)
    }

    fn open_dir(location: &str) -> Result<Self, Error> {
        let dir = PathBuf::from(location.strip_prefix("file://").unwrap_or(location));
        let objects =
            LocalFileSystem::new_with_prefix(&dir).map_err(|e| store_error(location, e))?;
        Ok(Store {
            objects: Arc::new(objects),
            root: ObjectPath::default(),
            location: location.to_owned(),
            local: Some(dir),
            staging: None,
            lock: None,
        })
    }

    fn open_remote(location: &str, scheme: &str) -> Result<Self, Error> {
        // Object stores sign over ring and speak TLS through rustls: its process-wide provider
        // must be set once (an embedder may have set one already).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let url = url_of(location)?;
        let built: Result<Arc<dyn ObjectStore>, object_store::Error> = match scheme {
            "s3" | "s3a" => (AmazonS3Builder::from_env().with_url(location).build())
                .map(|s| Arc::new(s) as Arc<dyn ObjectStore>),
            "gs" => (GoogleCloudStorageBuilder::from_env()
                .with_url(location)
                .build())
            .map(|s| Arc::new(s) as Arc<dyn ObjectStore>),
            "az" | "azure" | "abfs" | "abfss" => {
                (MicrosoftAzureBuilder::from_env().with_url(location).build())
                    .map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
            }
            _ => {
                return Err(Error::InvalidConfig {
                    what: "backup location",
                    detail: format!("{location}: a directory, or an s3://, gs:// or az:// URL"),
                })
            }
        };
        let objects = built.map_err(|e| store_error(location, e))?;
        Ok(Store {
            objects,
            root: ObjectPath::from(url.1.trim_matches('/')),
            location: location.trim_end_matches('/').to_owned(),
            local: None,
            staging: None,
            lock: None,
        })
    }

    /// The location as given.
    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    /// `name` (relative to the backup) as a user would find it.
    pub(crate) fn describe(&self, name: &str) -> String {
        format!("{}/{name}", self.location.trim_end_matches('/'))
    }

    /// A directory where files are written before [`Store::publish`].
    pub(crate) fn staging_dir(&self) -> &Path {
        (self.staging.as_deref()).expect("a backup writes only to a store opened to write")
    }

    fn path(&self, name: &str) -> ObjectPath {
        name.split('/')
            .fold(self.root.clone(), |path, part| path.join(part))
    }

    /// Publishes the finished file `staged` as `name`, whole, and removes it from staging.
    pub(crate) async fn publish(&self, name: &str, staged: &Path) -> Result<(), Error> {
        if let Some(dir) = &self.local {
            let target = dir.join(name);
            let renamed = match target.parent() {
                Some(parent) => {
                    std::fs::create_dir_all(parent).and_then(|()| std::fs::rename(staged, &target))
                }
                None => std::fs::rename(staged, &target),
            };
            return renamed.map_err(|error| Error::Backup {
                file: target.display().to_string(),
                position: None,
                detail: format!("cannot publish the segment: {error}"),
            });
        }
        let size = std::fs::metadata(staged).map(|m| m.len()).unwrap_or(0);
        let uploaded = if size as usize <= PART_BYTES {
            let bytes = tokio::fs::read(staged).await;
            let bytes = bytes.map_err(|error| self.staging_error(staged, error))?;
            (self
                .objects
                .put(&self.path(name), PutPayload::from(bytes))
                .await)
                .map(drop)
        } else {
            self.upload_in_parts(name, staged).await?
        };
        uploaded.map_err(|e| store_error(&self.describe(name), e))?;
        std::fs::remove_file(staged).map_err(|error| self.staging_error(staged, error))
    }

    /// A multipart upload, completed only once every part is up (aborted otherwise).
    async fn upload_in_parts(
        &self,
        name: &str,
        staged: &Path,
    ) -> Result<Result<(), object_store::Error>, Error> {
        let upload = match self.objects.put_multipart(&self.path(name)).await {
            Ok(upload) => upload,
            Err(error) => return Ok(Err(error)),
        };
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
        let mut file = (tokio::fs::File::open(staged).await)
            .map_err(|error| self.staging_error(staged, error))?;
        let mut part = vec![0; PART_BYTES];
        loop {
            let read = match file.read(&mut part).await {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) => {
                    let _ = writer.abort().await;
                    return Err(self.staging_error(staged, error));
                }
            };
            if let Err(error) = writer.wait_for_capacity(2).await {
                return Ok(Err(error));
            }
            writer.write(&part[..read]);
        }
        Ok(writer.finish().await.map(drop))
    }

    fn staging_error(&self, staged: &Path, error: std::io::Error) -> Error {
        Error::Backup {
            file: staged.display().to_string(),
            position: None,
            detail: format!("staging file: {error}"),
        }
    }

    /// The size of `name`, `None` if it is absent.
    pub(crate) async fn size(&self, name: &str) -> Result<Option<u64>, Error> {
        match self.objects.head(&self.path(name)).await {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(error) => Err(store_error(&self.describe(name), error)),
        }
    }

    /// Bytes `range` of `name`.
    pub(crate) async fn read_range(&self, name: &str, range: Range<u64>) -> Result<Bytes, Error> {
        (self.objects.get_range(&self.path(name), range).await)
            .map_err(|e| store_error(&self.describe(name), e))
    }

    /// The manifest and its version, `None` before the first backup.
    pub(crate) async fn read_manifest(&self) -> Result<Option<(Bytes, ManifestVersion)>, Error> {
        let found = match self.objects.get(&self.path(MANIFEST)).await {
            Ok(found) => found,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(error) => return Err(store_error(&self.describe(MANIFEST), error)),
        };
        let version = ManifestVersion(UpdateVersion {
            e_tag: found.meta.e_tag.clone(),
            version: found.meta.version.clone(),
        });
        let bytes = (found.bytes().await).map_err(|e| store_error(&self.describe(MANIFEST), e))?;
        Ok(Some((bytes, version)))
    }

    /// Writes the manifest if it is still at `expected` (`None`: still absent); its new version.
    pub(crate) async fn write_manifest(
        &self,
        bytes: Vec<u8>,
        expected: Option<&ManifestVersion>,
    ) -> Result<ManifestVersion, Error> {
        let path = self.path(MANIFEST);
        let mode = match (expected, &self.local) {
            (None, _) => PutMode::Create,
            // A directory has no conditional overwrite: the version read is checked just
            // before (another writer would also need this directory at the same moment).
            (Some(version), Some(_)) => {
                self.check_version(version).await?;
                PutMode::Overwrite
            }
            (Some(version), None) => PutMode::Update(version.0.clone()),
        };
        let options = PutOptions::from(mode);
        let put = self
            .objects
            .put_opts(&path, PutPayload::from(bytes), options)
            .await;
        match put {
            Ok(result) => Ok(ManifestVersion(UpdateVersion {
                e_tag: result.e_tag,
                version: result.version,
            })),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Err(self.written_meanwhile()),
            Err(error) => Err(store_error(&self.describe(MANIFEST), error)),
        }
    }

    async fn check_version(&self, expected: &ManifestVersion) -> Result<(), Error> {
        let head = self.objects.head(&self.path(MANIFEST)).await;
        let head = head.map_err(|e| store_error(&self.describe(MANIFEST), e))?;
        if head.e_tag != expected.0.e_tag {
            return Err(self.written_meanwhile());
        }
        Ok(())
    }

    fn written_meanwhile(&self) -> Error {
        Error::Backup {
            file: self.describe(MANIFEST),
            position: None,
            detail: "another backup wrote the manifest meanwhile: one backup at a time per \
                     location"
                .to_owned(),
        }
    }
}

/// Locks a local backup's staging directory (flock: released by the kernel when the process
/// ends, however it ends), or says that another backup holds it.
#[cfg(unix)]
fn lock(staging: &Path, location: &str) -> Result<Lock, Error> {
    use nix::fcntl::{Flock, FlockArg};
    let opened = std::fs::File::open(staging);
    let dir = opened.map_err(|error| Error::Backup {
        file: staging.display().to_string(),
        position: None,
        detail: format!("cannot open the staging directory: {error}"),
    })?;
    match Flock::lock(dir, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => Ok(locked),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Err(Error::Backup {
            file: location.to_owned(),
            position: None,
            detail: "another backup is writing into this directory now: one backup at a time \
                     per location"
                .to_owned(),
        }),
        Err((_, errno)) => Err(Error::Backup {
            file: staging.display().to_string(),
            position: None,
            detail: format!("cannot lock the staging directory: {errno}"),
        }),
    }
}

/// Elsewhere a directory is not locked: one backup at a time is the user's to keep.
#[cfg(not(unix))]
fn lock(_staging: &Path, _location: &str) -> Result<Lock, Error> {
    Ok(())
}

#[cfg(unix)]
type Lock = nix::fcntl::Flock<std::fs::File>;
#[cfg(not(unix))]
type Lock = ();

/// A remote backup's staging directory name, its own: two backups running at once (in one
/// process or two) never write each other's staging files.
fn staging_name() -> String {
    static OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

/// The bucket-relative prefix of an object store URL: `("bucket", "prefix/inside")`.
fn url_of(location: &str) -> Result<(String, String), Error> {
    let rest = location
        .split_once("://")
        .map_or(location, |(_, rest)| rest);
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(Error::InvalidConfig {
            what: "backup location",
            detail: format!("{location}: no bucket or container"),
        });
    }
    Ok((bucket.to_owned(), prefix.to_owned()))
}

fn store_error(location: &str, source: object_store::Error) -> Error {
    Error::Store {
        location: location.to_owned(),
        source: Box::new(source),
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
