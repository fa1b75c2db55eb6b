use super::*;
use crate::cache::store::StoreWriter;

/// A cached ConfigMap, as a store hands it out.
fn object(name: &str) -> CachedObject {
    let mut writer = StoreWriter::new();
    writer.upsert(Arc::new(
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": name, "namespace": "ns", "resourceVersion": "7" },
            "data": { "k": name }
        }))
        .unwrap(),
    ));
    writer.reader().get(&format!("ns/{name}")).unwrap()
}

fn target(dir: &Path, cluster: &str, options: &InformerOptions) -> Target {
    let key = ResourceKey::new("", "v1", "configmaps");
    Target::new(
        &SnapshotOptions::new(dir),
        &key,
        options,
        cluster.to_owned(),
    )
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kdi-snapshot-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_snapshot_is_checked_whole_then_read_page_by_page() {
    let dir = scratch("pages");
    let t = target(&dir, "c1", &InformerOptions::default());
    let objects: Vec<_> = ["a", "b", "c", "d", "e"].map(object).to_vec();
    t.write("7", &objects).unwrap();
    let mut opened = t.open().unwrap();
    assert_eq!((opened.objects, opened.resource_version.as_str()), (5, "7"));
    let mut sizes = Vec::new();
    while let Some(page) = opened.page(2).unwrap() {
        sizes.push(page.len());
    }
    assert_eq!(sizes, [2, 2, 1]);
    // A body that does not match its checksum is refused before any
    // object is decoded.
    let mut bytes = std::fs::read(&t.path).unwrap();
    // The third object's name: the byte after its length (1).
    let at = bytes.windows(2).rposition(|w| w == b"\x01c").unwrap();
    bytes[at + 1] = b'x';
    std::fs::write(&t.path, bytes).unwrap();
    assert!(matches!(t.open(), Err(SnapshotRefusal::Corrupt { .. })));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_snapshot_reads_back_as_written_and_only_for_its_target() {
    let dir = scratch("roundtrip");
    let options = InformerOptions::default();
    let t = target(&dir, "c1", &options);
    assert!(matches!(t.load(), Err(SnapshotRefusal::Missing(_))));
    t.write("42", &[object("a"), object("b")]).unwrap();
    let loaded = t.load().unwrap();
    assert_eq!(loaded.resource_version, "42");
    assert_eq!(loaded.objects.len(), 2);
    assert_eq!(loaded.objects[1].metadata.name.as_deref(), Some("b"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&t.path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // Another cluster's snapshot is refused.
    let other = target(&dir, "c2", &options);
    assert_eq!(other.path, t.path);
    let err = other.load().unwrap_err();
    assert!(matches!(err, SnapshotRefusal::Mismatched { .. }), "{err}");
    assert!(err.to_string().contains("cluster c1"), "{err}");
    // Other options shape another cache.
    let narrower = target(&dir, "c1", &options.clone().label_selector("app=web"));
    std::fs::copy(&t.path, &narrower.path).unwrap();
    assert!(matches!(
        narrower.load(),
        Err(SnapshotRefusal::Mismatched { .. })
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn truncated_corrupted_and_foreign_files_are_refused() {
    let dir = scratch("corrupt");
    let t = target(&dir, "c1", &InformerOptions::default());
    t.write("42", &[object("a"), object("b")]).unwrap();
    let whole = std::fs::read(&t.path).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", whole[..whole.len() - 5].to_vec()),
        ("header only", whole[..MAGIC.len() + 10].to_vec()),
        ("flipped", {
            let mut b = whole.clone();
            let last = b.len() - 3;
            b[last] ^= 0x20;
            b
        }),
        (
            "random",
            (0..4096u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
        ),
        ("empty", Vec::new()),
    ];
    for (what, bytes) in cases {
        std::fs::write(&t.path, bytes).unwrap();
        let err = t.load().unwrap_err();
        assert!(
            matches!(err, SnapshotRefusal::Corrupt { .. }),
            "{what}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_write_interrupted_before_its_rename_leaves_the_previous_snapshot() {
    let dir = scratch("interrupted");
    let t = target(&dir, "c1", &InformerOptions::default());
    t.write("1", &[object("a")]).unwrap();
    // What a process killed in the middle of a write leaves behind.
    let tmp = dir.join(format!(
        ".{}.tmp-999999",
        t.path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&tmp, &MAGIC.as_bytes()[..10]).unwrap();
    assert_eq!(t.load().unwrap().resource_version, "1");
    let _ = std::fs::remove_dir_all(&dir);
}
