//! What kdi says on stderr about its informers: while their caches sync,
//! and, for `watch`, for as long as they run.
//!
//! Every informer's state (syncing, synced, access denied, retrying, not
//! served, gone) is said when it changes, once: a backoff that retries the
//! same error says nothing new. What an informer is still waiting for is
//! said again at `--progress-interval`, as are index failures when their
//! count has grown. On a terminal the lines are for people, and while the
//! caches sync a live bar per informer ([`bars`]) shows what the syncing
//! lines would say, and more: how many objects it listed, how fast.
//! Otherwise they are JSON objects, one per line, for programs, and the
//! routine steps (syncing, then synced) are left out. Which of the two is
//! [`Stderr`]'s decision.
//!
//! A one-shot command (`get`) ends at the first 403 or 401: waiting would
//! not change the answer. `watch` keeps waiting for access, which can be
//! granted while it runs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube_dynamic_informer::declarative::SetMember;
use kube_dynamic_informer::factory::{CacheSyncReport, InformerHandle};
use kube_dynamic_informer::informer::InformerStatus;
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::exit::{Failure, code};
use crate::stderr::Stderr;

mod bars;

use bars::SyncBars;

/// What was last said of an informer: its status's name and reason, and
/// whether that was a failure it retries.
#[derive(Clone, PartialEq, Eq)]
struct Said {
    name: &'static str,
    reason: String,
    failure: bool,
}

impl Said {
    fn of(status: &InformerStatus) -> Self {
        Said {
            name: status.name(),
            reason: status.reason().unwrap_or_default(),
            failure: status.is_failure(),
        }
    }
}

/// One informer, and what was last said of it.
struct Tracked {
    label: String,
    informer: InformerHandle,
    indexes: Vec<String>,
    status: watch::Receiver<InformerStatus>,
    /// The state and reason last said (or, for the routine states left
    /// unsaid in JSON, last seen).
    said: Option<Said>,
    /// Whether anything was printed about this informer.
    spoke: bool,
    /// Since when it is in its state.
    since: Instant,
    /// Index failure counts last said.
    failures: BTreeMap<String, u64>,
}

impl Tracked {
    /// Its status now.
    fn state(&self) -> InformerStatus {
        self.status.borrow().clone()
    }

    /// The resource it lists: for one asked for without a version, the
    /// version discovery designates once served.
    fn resource(&self) -> String {
        resource_label(&self.informer)
    }

    /// Index failures, per index that has any.
    fn index_failures(&self) -> BTreeMap<String, u64> {
        let store = self.informer.informer().store();
        self.indexes
            .iter()
            .filter_map(|i| Some((i.clone(), store.index_failures(i)?)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

/// Which shard a sharded informer keeps and where it was filtered:
/// `shard 1/4 by uid, filtered server-side`.
fn shard_words(informer: &InformerHandle) -> Option<String> {
    let options = informer.options();
    let which = match (options.cache.shard, &options.cache.shard_group) {
        (Some(shard), _) => format!("shard {shard}"),
        (None, Some(group)) => format!("the slots of {}", group.describe()),
        (None, None) => return None,
    };
    let stats = informer.informer().stats();
    let share = stats.shard_selector().map_or_else(String::new, |s| {
        format!(", {:.1} % of the hash space", s.share() * 100.0)
    });
    let filtering = stats
        .shard_filtering()
        .map_or_else(String::new, |f| format!(", filtered {f}"));
    Some(format!(
        "{which} by {}{share}{filtering}",
        options.cache.shard_key
    ))
}

/// A cache's estimated size for people: `~340 KiB`, `~4.2 MiB`, `~120 MiB`,
/// `~1.3 GiB`.
fn approximate_size(bytes: usize) -> String {
    const KIB: f64 = 1024.0;
    let bytes = bytes as f64;
    if bytes < KIB * KIB {
        format!("~{:.0} KiB", (bytes / KIB).ceil())
    } else if bytes < 10.0 * KIB * KIB {
        format!("~{:.1} MiB", bytes / (KIB * KIB))
    } else if bytes < KIB * KIB * KIB {
        format!("~{:.0} MiB", bytes / (KIB * KIB))
    } else {
        format!("~{:.1} GiB", bytes / (KIB * KIB * KIB))
    }
}

/// The resource of an informer as printed: `widgets.v1.example.com`; one
/// asked for by plural and group that is not served yet is
/// `widgets.example.com`.
pub fn resource_label(informer: &InformerHandle) -> String {
    informer.resource().to_string()
}

/// An informer joining or leaving a running set, for
/// [`Progress::follow`].
pub enum Membership {
    /// Joined.
    Joined(SetMember),
    /// Left: its name and informer.
    Left(String, InformerHandle),
}

/// Reports on a set of informers; see the [module docs](self).
pub struct Progress {
    stderr: Stderr,
    interval: Duration,
    tracked: Vec<Tracked>,
    /// Woken at any status change (changes that come together wake once).
    changes: Arc<Notify>,
    forwarders: Vec<JoinHandle<()>>,
}

impl Drop for Progress {
    fn drop(&mut self) {
        for f in &self.forwarders {
            f.abort();
        }
    }
}

/// How often bars turn their spinners and redraw their rates.
const BAR_TICK: Duration = Duration::from_millis(100);

impl Progress {
    /// Follows `informers`' statuses, to say them on `stderr`.
    pub fn new(informers: &[SetMember], stderr: Stderr, interval: Duration) -> Self {
        let mut progress = Progress {
            stderr,
            interval,
            tracked: Vec::new(),
            changes: Arc::new(Notify::new()),
            forwarders: Vec::new(),
        };
        for d in informers {
            progress.track(d);
        }
        progress
    }

    /// Whether lines are JSON, for programs.
    fn json(&self) -> bool {
        self.stderr.json()
    }

    /// Follows one more informer (one that joined a running set).
    pub fn track(&mut self, d: &SetMember) {
        let status = d.informer.informer().watch_status();
        let mut forward = status.clone();
        let changed = self.changes.clone();
        self.forwarders.push(tokio::spawn(async move {
            while forward.changed().await.is_ok() {
                changed.notify_one();
            }
        }));
        self.tracked.push(Tracked {
            label: d.entry.clone(),
            informer: d.informer.clone(),
            indexes: d.indexes.keys().cloned().collect(),
            status,
            said: None,
            spoke: false,
            since: Instant::now(),
            failures: BTreeMap::new(),
        });
    }

    /// Stops following the informer `name` declared (it left a running
    /// set).
    pub fn untrack(&mut self, name: &str, informer: &InformerHandle) {
        self.tracked
            .retain(|t| !(t.label == name && t.informer == *informer));
    }

    /// Says what happens while the library decides whether the caches
    /// synced: `verdict` is its wait (the factory's
    /// `wait_for_cache_sync_with`, under the command's policy: a one-shot
    /// command gives up at the first refusal, others wait for access), and
    /// `timeout` what it was given (`None`: for ever), for the message.
    /// `one_shot`: the verdict ends at a refusal, which is then said once.
    ///
    /// # Errors
    /// A refusal, or the caches not synced within `timeout`, as
    /// [`code::NOT_SYNCED`] ([`code::CLUSTER`] for refused credentials).
    pub async fn wait_for_sync(
        &mut self,
        verdict: impl std::future::Future<Output = CacheSyncReport>,
        timeout: Option<Duration>,
        one_shot: bool,
    ) -> Result<(), Failure> {
        let mut verdict = std::pin::pin!(verdict);
        let mut reminders = self.reminders();
        let changes = self.changes.clone();
        // Dropped (so cleared) on every way out, a stopped wait included.
        let mut bars = self
            .stderr
            .bars()
            .map(|multi| SyncBars::new(multi, self.tracked.iter().map(|t| t.label.as_str())));
        let mut ticks = tokio::time::interval(BAR_TICK);
        loop {
            self.say_changes(bars.as_mut(), one_shot);
            tokio::select! {
                () = changes.notified() => {}
                _ = reminders.tick() => self.remind(bars.is_some()),
                _ = ticks.tick(), if bars.is_some() => {
                    if let Some(bars) = &bars {
                        bars.tick();
                    }
                }
                report = &mut verdict => {
                    // The bars make way for the lines that stay.
                    drop(bars.take());
                    return self.said_verdict(&report, timeout, one_shot);
                }
            }
        }
    }

    /// What the library's verdict means for the command: synced (with the
    /// index failures said), a refusal, or caches not synced in time; the
    /// changes not said yet are said first.
    fn said_verdict(
        &mut self,
        report: &CacheSyncReport,
        timeout: Option<Duration>,
        one_shot: bool,
    ) -> Result<(), Failure> {
        self.say_changes(None, one_shot);
        let refused = report.failed().find_map(|r| {
            let why = r.result.as_ref().err()?.not_synced()?;
            why.is_refused().then_some(&r.resource)
        });
        if let Some(resource) = refused
            && let Some(i) = self
                .tracked
                .iter()
                .position(|t| t.informer.resource().to_string() == **resource)
        {
            return Err(self.refused(i));
        }
        if report.all_synced() {
            self.say_index_failures();
            return Ok(());
        }
        Err(self.timed_out(timeout.unwrap_or_default()))
    }

    /// After sync: says every change, and at the interval what is still
    /// waited for and new index failures, until `cancel`; informers join
    /// and leave as `joins` says.
    pub async fn follow(
        mut self,
        cancel: CancellationToken,
        mut joins: tokio::sync::mpsc::UnboundedReceiver<Membership>,
    ) {
        let mut reminders = self.reminders();
        let changes = self.changes.clone();
        loop {
            self.say_changes(None, false);
            tokio::select! {
                _ = cancel.cancelled() => return,
                () = changes.notified() => {}
                _ = reminders.tick() => self.remind(false),
                Some(m) = joins.recv() => match m {
                    Membership::Joined(d) => self.track(&d),
                    Membership::Left(name, informer) => self.untrack(&name, &informer),
                },
            }
        }
    }

    /// Says index failures whose count changed since last said.
    pub fn say_index_failures(&mut self) {
        for i in 0..self.tracked.len() {
            let now = self.tracked[i].index_failures();
            if now == self.tracked[i].failures {
                continue;
            }
            let t = &self.tracked[i];
            if self.json() {
                self.print_json(i, json!({ "indexFailures": now }));
            } else {
                for (index, n) in &now {
                    self.stderr.say(format!(
                        "kdi: {}: index {index:?}: the expression failed {n} time{} (each object it failed on is left out of the index)",
                        t.label,
                        if *n == 1 { "" } else { "s" },
                    ));
                }
            }
            self.tracked[i].failures = now;
        }
    }

    fn reminders(&self) -> tokio::time::Interval {
        // An interval past the clock's end is one that never comes.
        let first = Instant::now()
            .checked_add(self.interval)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(u64::from(u32::MAX)));
        let mut reminders = tokio::time::interval_at(first, self.interval);
        reminders.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        reminders
    }

    /// Says each state that changed since last said; while `bars` are
    /// drawn, they show every state, and only failures are also said.
    ///
    /// `refusal_ends_wait`: a one-shot wait is under way, which a refusal
    /// ends and which says it then, once: not as a change before.
    fn say_changes(&mut self, mut bars: Option<&mut SyncBars>, refusal_ends_wait: bool) {
        let json = self.json();
        for i in 0..self.tracked.len() {
            let status = self.tracked[i].state();
            if let Some(bars) = bars.as_deref_mut() {
                let cached = self.tracked[i].informer.informer().store().len();
                bars.show(i, &status, cached);
                // The routine steps stay unsaid until the bars are gone:
                // then the state they ended in is said.
                if matches!(
                    status,
                    InformerStatus::NotStarted
                        | InformerStatus::Syncing { .. }
                        | InformerStatus::Relisting { .. }
                        | InformerStatus::Synced
                ) {
                    continue;
                }
            }
            if refusal_ends_wait && status.is_refused() {
                continue;
            }
            let now = Said::of(&status);
            let t = &mut self.tracked[i];
            if t.said.as_ref() == Some(&now) {
                continue;
            }
            // Listing again after a failure is the retry, not news: the
            // failure stands until the list succeeds or fails otherwise.
            let syncing = matches!(
                status,
                InformerStatus::Syncing { .. } | InformerStatus::Relisting { .. }
            );
            if syncing && t.said.as_ref().is_some_and(|s| s.failure) {
                continue;
            }
            if t.said.as_ref().map(|s| s.name) != Some(now.name) {
                t.since = Instant::now();
            }
            // A program hears of the routine steps only when they end
            // something it was told.
            let worth_saying = match status {
                InformerStatus::NotStarted => false,
                InformerStatus::Syncing { .. } => !json,
                // How an informer with snapshots started is news.
                InformerStatus::Synced => {
                    !json || t.spoke || t.informer.informer().stats().snapshot_start().is_some()
                }
                _ => true,
            };
            if worth_saying {
                self.say(i, &status, false);
            }
            self.tracked[i].said = Some(now);
        }
    }

    /// Says again what each informer not synced is waiting for (unless
    /// bars show it), and new index failures.
    fn remind(&mut self, bars_shown: bool) {
        let waiting = if bars_shown { 0 } else { self.tracked.len() };
        for i in 0..waiting {
            let status = self.tracked[i].state();
            if matches!(
                status,
                InformerStatus::Synced | InformerStatus::NotStarted | InformerStatus::Stopped
            ) {
                continue;
            }
            self.say(i, &status, true);
        }
        self.say_index_failures();
    }

    fn say(&mut self, i: usize, status: &InformerStatus, again: bool) {
        let t = &self.tracked[i];
        let waited = t.since.elapsed().as_secs();
        let store = t.informer.informer().store();
        let reason = status.reason().unwrap_or_default();
        if self.json() {
            let mut line = json!({ "status": status.name() });
            match status {
                InformerStatus::Syncing { listed } => line["listed"] = json!(listed),
                InformerStatus::Synced => {
                    line["objects"] = json!(store.len());
                    line["cacheBytes"] = json!(store.approximate_bytes());
                    if let Some(shard) = shard_words(&t.informer) {
                        line["shard"] = json!(shard);
                    }
                    if let Some(start) = t.informer.informer().stats().snapshot_start() {
                        line["snapshot"] = json!(start.to_string());
                    }
                }
                _ => {}
            }
            if !reason.is_empty() {
                line["reason"] = json!(reason);
            }
            if *status != InformerStatus::Synced {
                line["waitingSeconds"] = json!(waited);
            }
            self.print_json(i, line);
        } else {
            let mut words = String::from(status.words());
            match status {
                InformerStatus::Syncing { listed } => {
                    words.push_str(&format!(", {listed} objects listed"));
                }
                InformerStatus::Synced => {
                    words.push_str(&format!(
                        ", {} objects, {}",
                        store.len(),
                        approximate_size(store.approximate_bytes())
                    ));
                    if let Some(shard) = shard_words(&t.informer) {
                        words.push_str(&format!(" of {shard}"));
                    }
                    if let Some(start) = t.informer.informer().stats().snapshot_start() {
                        words.push_str(&format!(" ({start})"));
                    }
                }
                _ => {}
            }
            if again {
                words = format!("still {words} after {waited}s");
            }
            if !reason.is_empty() {
                words.push_str(": ");
                words.push_str(&reason);
            }
            self.stderr.say(format!("kdi: {}: {words}", t.label));
        }
        self.tracked[i].spoke = true;
    }

    fn print_json(&self, i: usize, fields: Value) {
        let t = &self.tracked[i];
        let mut line = json!({ "informer": t.label, "resource": t.resource() });
        if let (Value::Object(line), Value::Object(fields)) = (&mut line, fields) {
            line.extend(fields);
        }
        self.stderr.say(line);
    }

    /// The one-shot failure at a refusal: said once, in the failure (and,
    /// for programs, in its JSON line).
    fn refused(&self, i: usize) -> Failure {
        let t = &self.tracked[i];
        let status = t.state();
        let reason = status.reason().unwrap_or_default();
        let exit = if status.name() == "unauthorized" {
            code::CLUSTER
        } else {
            code::NOT_SYNCED
        };
        if self.json() {
            self.print_json(
                i,
                json!({ "synced": false, "status": status.name(), "reason": reason }),
            );
            Failure {
                code: exit,
                message: format!(
                    "{}: {} (the server's answer is in the JSON line above)",
                    t.label,
                    status.words()
                ),
            }
        } else {
            Failure {
                code: exit,
                message: format!("{}: {}: {reason}", t.label, status.words()),
            }
        }
    }

    /// The failure when `timeout` passed: every cache not synced, with what
    /// it was doing.
    fn timed_out(&self, timeout: Duration) -> Failure {
        let late: Vec<usize> = (0..self.tracked.len())
            .filter(|&i| !self.tracked[i].status.borrow().is_synced())
            .collect();
        let mut message = format!(
            "{} of {} caches did not sync within {timeout:?}",
            late.len(),
            self.tracked.len()
        );
        for &i in &late {
            let t = &self.tracked[i];
            let status = t.state();
            let now = Said::of(&status);
            if self.json() {
                self.print_json(
                    i,
                    json!({ "synced": false, "status": now.name, "reason": now.reason }),
                );
                message.push_str(if i == late[0] { ": " } else { ", " });
                message.push_str(&format!("{} ({})", t.label, status.words()));
            } else {
                message.push_str(&format!("\n  {}: {}", t.label, status.words()));
                // A reason said above is not said again.
                let said = t.spoke && t.said.as_ref() == Some(&now);
                if said {
                    message.push_str(" (see above)");
                } else if !now.reason.is_empty() {
                    message.push_str(&format!(": {}", now.reason));
                }
            }
        }
        if self.json() {
            message.push_str("; reasons in the JSON lines above");
        }
        Failure::not_synced(message)
    }
}

#[cfg(test)]
mod tests {
    use super::approximate_size;

    #[test]
    fn sizes_are_said_in_the_unit_that_suits_them() {
        let said: Vec<String> = [0, 1, 340 * 1024, 4_404_019, 120 << 20, 1_395_864_371]
            .into_iter()
            .map(approximate_size)
            .collect();
        assert_eq!(
            said,
            [
                "~0 KiB", "~1 KiB", "~340 KiB", "~4.2 MiB", "~120 MiB", "~1.3 GiB"
            ]
        );
    }
}
