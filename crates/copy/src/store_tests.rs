use super::*;

fn staged(store: &Store, name: &str, bytes: &[u8]) -> PathBuf {
    let path = store.staging_dir().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[tokio::test]
async fn a_published_segment_is_whole_and_leaves_staging() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_to_write(dir.path().to_str().unwrap())
        .await
        .unwrap();
    let file = staged(&store, "a.partial", b"0123456789");
    store
        .publish("orders-0/00000000000000000000.log", &file)
        .await
        .unwrap();
    assert!(!file.exists());
    let published = dir.path().join("orders-0/00000000000000000000.log");
    assert_eq!(std::fs::read(published).unwrap(), b"0123456789");
    let name = "orders-0/00000000000000000000.log";
    assert_eq!(store.size(name).await.unwrap(), Some(10));
    assert_eq!(&store.read_range(name, 2..5).await.unwrap()[..], b"234");
    assert_eq!(store.size("orders-0/absent.log").await.unwrap(), None);
}

#[tokio::test]
async fn the_manifest_is_written_only_over_the_version_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_to_write(dir.path().to_str().unwrap())
        .await
        .unwrap();
    assert!(store.read_manifest().await.unwrap().is_none());
    let first = store.write_manifest(b"{1}".to_vec(), None).await.unwrap();
    // A second first write (another backup starting in the same place) is refused.
    let error = store
        .write_manifest(b"{2}".to_vec(), None)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("another backup"), "{error}");
    // Sleep past the file system's timestamp granularity so the version changes visibly.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let (bytes, read) = store.read_manifest().await.unwrap().unwrap();
    assert_eq!(&bytes[..], b"{1}");
    store
        .write_manifest(b"{3}".to_vec(), Some(&first))
        .await
        .unwrap();
    // `read` was taken before the write above: a writer holding it has been overtaken.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let error = store
        .write_manifest(b"{4}".to_vec(), Some(&read))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("meanwhile"), "{error}");
}

#[tokio::test]
async fn an_unknown_scheme_is_refused_by_name() {
    let error = Store::open("ftp://host/backup").await.unwrap_err();
    assert!(error.to_string().contains("ftp://host/backup"), "{error}");
}

#[tokio::test]
async fn a_directory_takes_one_writer_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let first = Store::open_to_write(location).await.unwrap();
    let error = Store::open_to_write(location).await.unwrap_err();
    assert!(
        error.to_string().contains("another backup is writing"),
        "{error}"
    );
    // Readers (a restore) are never held back by a writer.
    Store::open(location).await.unwrap();
    drop(first);
    Store::open_to_write(location).await.unwrap();
}
