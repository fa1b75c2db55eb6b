use kube_core::{DynamicObject, ObjectMeta};

use super::*;
use crate::vocabulary::VocabularyError;

fn object(uid: &str, namespace: &str) -> DynamicObject {
    DynamicObject {
        types: None,
        metadata: ObjectMeta {
            name: Some("x".into()),
            namespace: Some(namespace.into()),
            uid: Some(uid.into()),
            ..ObjectMeta::default()
        },
        data: serde_json::json!({}),
    }
}

#[test]
fn the_hash_is_fnv1a_64() {
    // Reference values of FNV-1a 64 (and of Go's hash/fnv New64a).
    assert_eq!(fnv1a_64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a_64(b"foobar"), 0x8594_4171_f739_67e8);
    let o = object("6f1c3b8e-0000-4000-8000-000000000001", "shop");
    assert_eq!(
        ShardKey::Uid.hash(&o),
        fnv1a_64(o.metadata.uid.as_ref().unwrap().as_bytes())
    );
    assert_eq!(ShardKey::Namespace.hash(&o), fnv1a_64(b"shop"));
}

#[test]
fn parts_cover_the_hash_space_without_overlap() {
    for count in [1, 2, 3, 4, 7, 64] {
        let parts: Vec<ShardRange> = (0..count)
            .map(|i| ShardRange::part(i, count).unwrap())
            .collect();
        assert_eq!(parts[0].start(), 0);
        assert_eq!(parts.last().unwrap().end(), HASH_SPACE_END);
        for w in parts.windows(2) {
            assert_eq!(u128::from(w[1].start()), w[0].end(), "{count} parts");
        }
        let all = ShardSelector::new(ShardKey::Uid, parts);
        assert_eq!(all.ranges(), [ShardRange::all()], "adjacent ranges merge");
    }
}

#[test]
fn each_object_is_in_exactly_one_static_shard() {
    let shards: Vec<ShardSelector> = (0..4)
        .map(|i| StaticShard::new(i, 4).unwrap().selector(ShardKey::Uid))
        .collect();
    let mut per_shard = [0usize; 4];
    for n in 0..4000 {
        // UIDs are random (version 4 UUIDs); FNV-1a spreads those evenly,
        // not short strings that differ in one character.
        let r: u128 = rand::random();
        let uid = format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            r >> 96,
            (r >> 80) & 0xffff,
            (r >> 68) & 0xfff,
            (r >> 56) & 0xfff,
            r & 0xffff_ffff_ffff
        );
        let o = object(&uid, "ns");
        let holders: Vec<usize> = (0..4).filter(|i| shards[*i].matches(&o)).collect();
        assert_eq!(holders.len(), 1, "{uid} (#{n}) in shards {holders:?}");
        per_shard[holders[0]] += 1;
    }
    assert!(
        per_shard.iter().all(|n| (800..1200).contains(n)),
        "{per_shard:?}"
    );
}

#[test]
fn selectors_are_written_as_the_server_reads_them_and_read_back() {
    let s = ShardSelector::new(
        ShardKey::Namespace,
        [
            ShardRange::part(3, 4).unwrap(),
            ShardRange::part(0, 4).unwrap(),
        ],
    );
    let text = s.to_string();
    assert_eq!(
        text,
        "shardRange(object.metadata.namespace, '0x0000000000000000', '0x4000000000000000') || \
         shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')"
    );
    assert_eq!(text.parse::<ShardSelector>().unwrap(), s);
    let spaced: ShardSelector =
        "  shardRange ( object.metadata.uid ,\"0x0000000000000000\", '0x8000000000000000' ) "
            .parse()
            .unwrap();
    assert_eq!(
        spaced,
        StaticShard::new(0, 2).unwrap().selector(ShardKey::Uid)
    );
}

#[test]
fn malformed_selectors_say_what_is_wrong() {
    let cases = [
        ("", "empty"),
        (
            "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
            "16 hex digits",
        ),
        (
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x4000000000000000')",
            "not below",
        ),
        (
            "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
            "unsupported field",
        ),
        (
            "shardRange(object.metadata.uid, 0x0000000000000000, '0x8000000000000000')",
            "quoted",
        ),
        (
            "shardRange(object.metadata.uid, '0x000000000000000G', '0x8000000000000000')",
            "lowercase hex",
        ),
        (
            "shardRange(object.metadata.uid, '0x10000000000000000', '0x10000000000000000')",
            "2^64",
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000')",
            "3 arguments",
        ),
        (
            "labelRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
            "is not shardRange",
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || \
             shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
            "same field",
        ),
    ];
    for (text, want) in cases {
        let err = text.parse::<ShardSelector>().unwrap_err().to_string();
        assert!(err.contains(want), "{text:?}: {err}");
    }
}

#[test]
fn bad_static_shards_are_refused() {
    assert_eq!(StaticShard::new(0, 0), Err(VocabularyError::ZeroCount));
    assert_eq!(
        StaticShard::new(4, 4),
        Err(VocabularyError::ShardIndexOutOfRange { index: 4, count: 4 })
    );
    assert_eq!(
        "4/4".parse::<StaticShard>().unwrap_err().to_string(),
        "shard index 4 is out of range for 4 shards (indexes are 0 to 3)"
    );
    assert_eq!(
        "0/0".parse::<StaticShard>().unwrap_err().to_string(),
        "shard count must be at least 1, got 0"
    );
    for bad in ["", "1", "1/", "/4", "-1/4", "a/b", "1/4/2", "1.0/4"] {
        let err = bad.parse::<StaticShard>().unwrap_err();
        assert_eq!(err, VocabularyError::ShardSyntax(bad.to_owned()), "{bad:?}");
    }
    assert_eq!(" 2 / 3 ".parse::<StaticShard>().unwrap().to_string(), "2/3");
    assert!(ShardRange::new(5, 5).is_err());
    assert!(ShardRange::new(0, HASH_SPACE_END + 1).is_err());
    assert!("pod".parse::<ShardKey>().is_err());
}

mod props {
    use proptest::prelude::*;

    use super::super::*;

    proptest! {
        /// Text from outside (config files, the command line, a server's
        /// shardInfo) never panics a parser.
        #[test]
        fn parsers_never_panic(text in ".{0,200}") {
            let _ = text.parse::<ShardSelector>();
            let _ = text.parse::<StaticShard>();
            let _ = text.parse::<ShardKey>();
        }

        /// Near-misses of the grammar either parse to what they say or are
        /// refused.
        #[test]
        fn selectors_round_trip(
            bounds in proptest::collection::vec((any::<u64>(), any::<u64>()), 1..5),
            namespace in any::<bool>(),
        ) {
            let key = if namespace { ShardKey::Namespace } else { ShardKey::Uid };
            let ranges: Vec<ShardRange> = bounds
                .iter()
                .filter_map(|(a, b)| {
                    let (lo, hi) = if a < b { (*a, *b) } else { (*b, *a) };
                    ShardRange::new(lo, u128::from(hi) + 1).ok()
                })
                .collect();
            let selector = ShardSelector::new(key, ranges);
            let text = selector.to_string();
            if selector.is_empty() {
                prop_assert!(text.parse::<ShardSelector>().is_err());
            } else {
                prop_assert_eq!(text.parse::<ShardSelector>().unwrap(), selector);
            }
        }
    }
}
