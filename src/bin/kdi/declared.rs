//! An informer of the command as the user declared it.

use std::collections::BTreeMap;

use kube_dynamic_informer::InformerHandle;
use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::declarative::SetMember;

use kube_dynamic_informer::cache::Redaction;

/// One informer of the command, as declared.
pub struct Declared {
    /// Its name in the config (or the resource as given).
    pub name: String,
    pub informer: InformerHandle,
    pub indexes: BTreeMap<String, IndexFn>,
    /// Marked `sensitive` in the config.
    pub sensitive: bool,
}

impl Declared {
    /// A member of a resource set, with the indexes it declares.
    pub fn from_member(m: &SetMember) -> Self {
        Declared {
            name: m.entry.clone(),
            informer: m.informer.clone(),
            indexes: m.indexes.clone(),
            sensitive: m.sensitive,
        }
    }

    pub fn redaction(&self, show_secrets: bool) -> Redaction {
        Redaction::for_resource(&self.informer.resource(), self.sensitive, show_secrets)
    }
}
