//! Planning a config: what each entry asks for, what access allows, and the
//! informers the factory gives for it, before anything changes.

use super::*;
use crate::factory::ResourceRef;

impl ResourceSet {
    /// The members `config` asks for now. An entry whose informer cannot
    /// be had is in `errors`: a reload is then refused, while following
    /// discovery leaves it out (and logs it).
    pub(super) async fn plan(&self, state: &State, config: &InformerSet) -> Plan {
        let mut plan = Plan::default();
        let joined = self.inner.shard_group.as_ref().map(|(spec, _)| spec);
        if config.shard_group.as_ref() != joined {
            plan.errors.push(PlanError {
                pointer: "/shardGroup".to_owned(),
                message: "the shard group cannot change while the set runs; restart to change it"
                    .to_owned(),
                entry: None,
                answer: None,
            });
        }
        let mut wants = self.wants(state, config, &mut plan).await;
        if let AccessPolicy::Skip { .. } = self.inner.policy {
            self.restrict_to_access(&mut wants, &mut plan).await;
        }
        let held =
            |informer: &InformerHandle| state.members.values().any(|m| m.informer == *informer);
        for want in wants {
            let key = (want.entry.clone(), want.resource.clone());
            let current = state.members.get(&key).filter(|c| {
                c.informer.informer().options().sharing_key() == want.options.sharing_key()
            });
            let informer = match current {
                Some(current) => current.informer.clone(),
                None => match self.informer_for(&want).await {
                    Ok(informer) => {
                        if !held(&informer) {
                            plan.created.push(informer.clone());
                        }
                        informer
                    }
                    Err(e) => {
                        plan.refuse(&want, key, e);
                        continue;
                    }
                },
            };
            let member = SetMember {
                entry: key.0.clone(),
                resource: key.1.clone(),
                from_pattern: matches!(want.target, Target::Key(_)),
                informer,
                sensitive: want.options.sensitive,
                indexes: want.compiled.indexes,
                filter: want.compiled.filter,
                changes: want.compiled.changes,
            };
            let replace = state.members.get(&key).is_some_and(|current| {
                current.informer == member.informer
                    && current.indexes.iter().any(|(name, func)| {
                        !member
                            .indexes
                            .get(name)
                            .is_some_and(|f| f.same_definition(func))
                    })
            });
            plan.members.insert(key, Planned { member, replace });
        }
        plan
    }

    /// The informer a want asks for, from the factory, with the want's
    /// options.
    async fn informer_for(&self, want: &Want) -> Result<InformerHandle, FactoryError> {
        let resource: ResourceRef = match &want.target {
            Target::Named => want.resource.as_str().into(),
            Target::Key(k) => k.into(),
        };
        let options = want.options.clone();
        self.inner
            .factory
            .for_resource_with(resource, |_| options)
            .await
    }

    /// What each entry of `config` asks for: informers named one by one,
    /// and each resource a pattern selects now.
    pub(super) async fn wants(
        &self,
        state: &State,
        config: &InformerSet,
        plan: &mut Plan,
    ) -> Vec<Want> {
        let mut wants = self.named_wants(config, plan).await;
        for (i, pattern) in config.patterns.iter().enumerate() {
            wants.extend(self.pattern_wants(state, i, pattern, plan).await);
        }
        self.in_shard_group(&mut wants);
        wants
    }

    /// What the informers named one by one ask for. A namespace
    /// restriction an entry inherits from the config's defaults does not
    /// apply to a cluster-scoped resource, as in a factory's own defaults.
    async fn named_wants(&self, config: &InformerSet, plan: &mut Plan) -> Vec<Want> {
        let factory = &self.inner.factory;
        let mut snapshot = factory.discovery().snapshot();
        if !snapshot.is_loaded() {
            // Unloaded, nothing is known; a discovery error is the
            // factory's to report for each entry.
            snapshot = factory.discovery().refresh().await.unwrap_or(snapshot);
        }
        let mut wants = Vec::new();
        for (i, spec) in config.informers.iter().enumerate() {
            // What access checks need, when discovery knows the name now.
            let known = crate::vocabulary::resource::ResourceName::parse(&spec.resource)
                .ok()
                .and_then(|n| n.resolve(snapshot.resources()).ok().cloned());
            let at = format!("/informers/{i}");
            let expressions = (&spec.indexes, spec.filter.as_deref(), &spec.changes[..]);
            let Some(compiled) = plan.compile(&at, spec.name(), expressions) else {
                continue;
            };
            wants.push(Want {
                at,
                entry: spec.name().to_string(),
                resource: spec.resource.clone(),
                target: Target::Named,
                options: match &known {
                    Some(k)
                        if !k.namespaced
                            && spec.options.watch.namespaces
                                == config.defaults.watch.namespaces =>
                    {
                        factory.pattern_options(k, spec.options.clone())
                    }
                    _ => spec.options.clone(),
                }
                .normalized(),
                known,
                compiled,
            });
        }
        wants
    }

    /// What the pattern at `/patterns/{i}` asks for: each resource it
    /// selects now, or, when it cannot be evaluated (an error of the
    /// cluster's, recorded), what it selected before.
    async fn pattern_wants(
        &self,
        state: &State,
        i: usize,
        pattern: &crate::declarative::config::PatternSpec,
        plan: &mut Plan,
    ) -> Vec<Want> {
        let at = format!("/patterns/{i}");
        let expressions = (
            &pattern.indexes,
            pattern.filter.as_deref(),
            &pattern.changes[..],
        );
        let Some(compiled) = plan.compile(&at, &pattern.name, expressions) else {
            return Vec::new();
        };
        let factory = &self.inner.factory;
        match factory.matching(&pattern.pattern).await {
            Ok(selected) => selected
                .into_iter()
                .map(|resource| Want {
                    at: at.clone(),
                    entry: pattern.name.clone(),
                    resource: resource.key().to_string(),
                    target: Target::Key(resource.key()),
                    options: factory
                        .pattern_options(&resource, pattern.options.clone())
                        .normalized(),
                    known: Some(resource),
                    compiled: compiled.clone(),
                })
                .collect(),
            Err(e) => {
                plan.errors.push(PlanError {
                    pointer: format!("{at}/match"),
                    message: error_chain(&e),
                    entry: Some(pattern.name.clone()),
                    answer: e.not_synced(),
                });
                // What the pattern selected stays until it can be evaluated
                // again (a reload with this error is refused anyway).
                state
                    .members
                    .values()
                    .filter(|m| m.from_pattern && m.entry == pattern.name)
                    .map(|current| Want {
                        at: at.clone(),
                        entry: current.entry.clone(),
                        resource: current.resource.clone(),
                        target: Target::Key(current.informer.resource().clone()),
                        options: current.informer.informer().options().clone(),
                        known: None,
                        compiled: compiled.clone(),
                    })
                    .collect()
            }
        }
    }

    /// Makes the wants without a static shard keep the slots of the set's
    /// shard group, if it has one.
    pub(super) fn in_shard_group(&self, wants: &mut [Want]) {
        let Some((_, group)) = &self.inner.shard_group else {
            return;
        };
        for want in wants.iter_mut().filter(|w| w.options.cache.shard.is_none()) {
            want.options.cache.shard_group = Some(group.into());
        }
    }

    /// Leaves out what the client may not list and watch, and narrows
    /// namespace restrictions to the namespaces allowed.
    pub(super) async fn restrict_to_access(&self, wants: &mut Vec<Want>, plan: &mut Plan) {
        let checks: Vec<Option<AccessCheck>> = wants
            .iter()
            .map(|w| {
                w.known.as_ref().map(|k| {
                    AccessCheck::new(k.key(), k.namespaced, w.options.watch.namespaces.clone())
                })
            })
            .collect();
        let asked: Vec<AccessCheck> = checks.iter().flatten().cloned().collect();
        let table = AccessTable::check(self.inner.factory.client(), &asked).await;
        let mut kept = Vec::new();
        for (mut want, check) in std::mem::take(wants).into_iter().zip(checks) {
            // Not served yet: the informer waits, and a 403 then is its
            // status's to report.
            let Some(check) = check else {
                kept.push(want);
                continue;
            };
            match table.allowed(&check) {
                Allowed::All => kept.push(want),
                Allowed::Namespaces(allowed) => {
                    want.options.watch.namespaces =
                        crate::vocabulary::scope::Namespaces::only(allowed);
                    kept.push(want);
                }
                Allowed::Nothing(reason) => plan.skipped.push(SkippedMember {
                    entry: want.entry,
                    resource: want.resource,
                    reason,
                    denied: true,
                }),
            }
        }
        *wants = kept;
    }
}

impl Plan {
    /// The expressions of the entry at `at`, compiled; `None` when one
    /// does not compile (possible in a set built in code; a loaded file was
    /// checked), each refusal an error located at it, and the entry is
    /// left out.
    fn compile(
        &mut self,
        at: &str,
        entry: &str,
        (indexes, filter, changes): (&BTreeMap<String, String>, Option<&str>, &[String]),
    ) -> Option<Compiled> {
        let indexes = indexes.iter().map(|(name, e)| (name, e.as_str()));
        let changes = changes.iter().map(String::as_str).enumerate();
        let refused = match Compiled::entry(at, indexes, filter, changes) {
            Ok(compiled) => return Some(compiled),
            Err(refused) => refused,
        };
        for (pointer, e) in refused {
            self.errors.push(PlanError {
                pointer,
                message: e.to_string(),
                entry: Some(entry.to_owned()),
                answer: None,
            });
        }
        None
    }

    /// Records why the factory gave no informer for `want`: left out (not
    /// served under `whenNotServed: skip`), or an error that refuses the
    /// config.
    fn refuse(&mut self, want: &Want, key: MemberKey, e: FactoryError) {
        let skip = match &e {
            FactoryError::NotServed {
                reason,
                when: WhenNotServed::Skip,
                ..
            } => Some(reason.clone()),
            FactoryError::Resolve { .. } if want.options.when_not_served == WhenNotServed::Skip => {
                Some(error_chain(&e))
            }
            _ => None,
        };
        if let Some(reason) = skip {
            self.skipped.push(SkippedMember {
                entry: key.0,
                resource: key.1,
                reason,
                denied: false,
            });
            return;
        }
        let (pointer, message) = match &want.target {
            Target::Named => (error_pointer(&want.at, &e), error_chain(&e)),
            Target::Key(k) => (
                format!("{}/match", want.at),
                format!("{k}: {}", error_chain(&e)),
            ),
        };
        self.errors.push(PlanError {
            pointer,
            message,
            entry: Some(key.0),
            answer: e.not_synced(),
        });
    }
}
