use std::collections::BTreeMap;

use super::*;

#[test]
fn rendezvous_moves_about_one_nth_of_the_slots() {
    const SLOTS: u32 = 256;
    let owners = |members: &[String]| -> BTreeMap<u32, String> {
        (0..SLOTS)
            .map(|s| (s, rendezvous(members, s).unwrap().to_owned()))
            .collect()
    };
    let three: Vec<String> = (0..3).map(|i| format!("member-{i}")).collect();
    let before = owners(&three);
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for owner in before.values() {
        *counts.entry(owner).or_default() += 1;
    }
    assert!(counts.values().all(|n| (60..110).contains(n)), "{counts:?}");
    let mut four = three.clone();
    four.push("member-3".into());
    let after = owners(&four);
    let moved: Vec<u32> = (0..SLOTS).filter(|s| before[s] != after[s]).collect();
    // Only slots the newcomer takes move, about a quarter of them.
    assert!(moved.iter().all(|s| after[s] == "member-3"));
    assert!((40..90).contains(&moved.len()), "{} moved", moved.len());
    // Without a member, only its slots move, to the others.
    let two: Vec<String> = vec![three[0].clone(), three[2].clone()];
    let without = owners(&two);
    for s in 0..SLOTS {
        if before[&s] != "member-1" {
            assert_eq!(before[&s], without[&s], "slot {s}");
        }
    }
    assert_eq!(rendezvous::<String>(&[], 0), None);
}

#[test]
fn group_configs_are_checked() {
    let ok = ShardGroupConfig::new("inventory", "monitoring", "pod-0");
    ok.validate().unwrap();
    let bad = |c: ShardGroupConfig, field: &str| {
        let err = c.validate().unwrap_err().to_string();
        assert!(err.starts_with(&format!("shard group {field} ")), "{err}");
    };
    bad(
        ShardGroupConfig::new("Inventory", "monitoring", "p"),
        "name",
    );
    bad(
        ShardGroupConfig::new("inv.entory", "monitoring", "p"),
        "name",
    );
    bad(ShardGroupConfig::new("-inv", "monitoring", "p"), "name");
    bad(ShardGroupConfig::new("", "monitoring", "p"), "name");
    bad(
        ShardGroupConfig::new("a".repeat(41), "monitoring", "p"),
        "name",
    );
    bad(ShardGroupConfig::new("inv", "Mon", "p"), "namespace");
    bad(ShardGroupConfig::new("inv", "mon", " "), "identity");
    bad(ok.clone().slots(0), "slots");
    bad(
        ok.clone()
            .lease_duration(std::time::Duration::from_millis(500)),
        "leaseDuration",
    );
    assert_eq!(ok.slot_lease_name(7), "inventory-slot-7");
    assert!(ok.member_lease_name().starts_with("inventory-member-"));
}
