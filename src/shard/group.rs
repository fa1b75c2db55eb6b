//! Shard groups (placeholder while written).
use super::ShardRange;
use tokio::sync::watch;

/// A shard group member.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShardGroup {
    name: String,
}

impl ShardGroup {
    pub(crate) fn ranges(&self) -> watch::Receiver<Option<Vec<ShardRange>>> {
        watch::channel(None).1
    }
}
