//! A Pod's row as the API server's printer (`printPod`) computes it: how
//! many containers are ready, the status word (`Running`,
//! `Init:CrashLoopBackOff`, `Terminating`, ...), the restarts and when the
//! last one was, and the wide columns.

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::Row;
use super::builtin::{created, items, number, text};
use super::format::{Time, human_duration, parse_time};

/// The cells of `pod`, and its row's condition once it has completed.
pub(super) fn cells(pod: &Value, now: Timestamp) -> Row {
    let phase = text(pod, "/status/phase");
    let status = Status::of(pod);
    let restarts = match status.last_restart {
        Some(at) if status.restarts != 0 => {
            format!(
                "{} ({} ago)",
                status.restarts,
                human_duration(now.duration_since(at))
            )
        }
        _ => status.restarts.to_string(),
    };
    let none = |value: &str| -> Value {
        if value.is_empty() {
            "<none>".into()
        } else {
            value.into()
        }
    };
    let ip = items(pod, "/status/podIPs")
        .first()
        .map_or("", |ip| text(ip, "/ip"));
    let conditions = match phase {
        "Succeeded" => Some(completed(
            "Succeeded",
            "The pod has completed successfully.",
        )),
        "Failed" => Some(completed("Failed", "The pod failed.")),
        _ => None,
    };
    Row {
        cells: vec![
            text(pod, "/metadata/name").into(),
            format!("{}/{}", status.ready, status.total).into(),
            status.reason.into(),
            restarts.into(),
            created(pod, now),
            none(ip),
            none(text(pod, "/spec/nodeName")),
            none(text(pod, "/status/nominatedNodeName")),
            readiness_gates(pod).into(),
        ],
        conditions,
    }
}

/// What the STATUS, READY and RESTARTS columns say of a pod, worked out as
/// the API server's printer works them out.
struct Status {
    reason: String,
    ready: usize,
    total: usize,
    restarts: i64,
    last_restart: Option<Timestamp>,
}

impl Status {
    fn of(pod: &Value) -> Status {
        let phase = text(pod, "/status/phase");
        let mut reason = match text(pod, "/status/reason") {
            "" => phase.to_owned(),
            reason => reason.to_owned(),
        };
        if items(pod, "/status/conditions")
            .iter()
            .any(|c| text(c, "/type") == "PodScheduled" && text(c, "/reason") == "SchedulingGated")
        {
            reason = "SchedulingGated".to_owned();
        }
        let init_containers = items(pod, "/spec/initContainers");
        let total = items(pod, "/spec/containers").len()
            + init_containers
                .iter()
                .filter(|c| text(c, "/restartPolicy") == "Always")
                .count();
        let mut status = Status {
            reason,
            ready: 0,
            total,
            restarts: 0,
            last_restart: None,
        };
        let (initializing, sidecar_restarts, last_sidecar_restart) =
            status.init_containers(pod, init_containers);
        let initialized = items(pod, "/status/conditions")
            .iter()
            .any(|c| text(c, "/type") == "Initialized" && text(c, "/status") == "True");
        if !initializing || initialized {
            status.restarts = sidecar_restarts;
            status.last_restart = last_sidecar_restart;
            status.containers(pod);
        }
        let deleting = pod
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null());
        if deleting && text(pod, "/status/reason") == "NodeLost" {
            status.reason = "Unknown".to_owned();
        } else if deleting && !matches!(phase, "Succeeded" | "Failed") {
            status.reason = "Terminating".to_owned();
        }
        status
    }

    /// Counts the init containers' restarts and ready sidecars, and says
    /// why the pod is still initializing; returns whether it is, and the
    /// sidecars' restarts and last restart.
    fn init_containers(
        &mut self,
        pod: &Value,
        init_containers: &[Value],
    ) -> (bool, i64, Option<Timestamp>) {
        let restartable = |name: &str| {
            init_containers
                .iter()
                .any(|c| text(c, "/name") == name && text(c, "/restartPolicy") == "Always")
        };
        let mut sidecar_restarts = 0i64;
        let mut last_sidecar_restart: Option<Timestamp> = None;
        for (i, container) in items(pod, "/status/initContainerStatuses")
            .iter()
            .enumerate()
        {
            let count = number(container, "/restartCount");
            let finished = finished_at(container);
            self.restarts += count;
            self.last_restart = later(self.last_restart, finished);
            let is_sidecar = restartable(text(container, "/name"));
            if is_sidecar {
                sidecar_restarts += count;
                last_sidecar_restart = later(last_sidecar_restart, finished);
            }
            let terminated = container.pointer("/state/terminated");
            let waiting_reason = text(container, "/state/waiting/reason");
            match terminated {
                Some(t) if number(t, "/exitCode") == 0 => continue,
                _ if is_sidecar && container.pointer("/started") == Some(&Value::Bool(true)) => {
                    if container.pointer("/ready") == Some(&Value::Bool(true)) {
                        self.ready += 1;
                    }
                    continue;
                }
                Some(t) => {
                    self.reason = match text(t, "/reason") {
                        "" => exit_words("Init:", t),
                        why => format!("Init:{why}"),
                    };
                }
                None if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" => {
                    self.reason = format!("Init:{waiting_reason}");
                }
                None => self.reason = format!("Init:{i}/{}", init_containers.len()),
            }
            return (true, sidecar_restarts, last_sidecar_restart);
        }
        (false, sidecar_restarts, last_sidecar_restart)
    }

    /// Counts the containers' restarts and ready ones, and takes the reason
    /// of the first (in the printer's order) that is waiting or ended.
    fn containers(&mut self, pod: &Value) {
        let mut running = false;
        for container in items(pod, "/status/containerStatuses").iter().rev() {
            self.restarts += number(container, "/restartCount");
            self.last_restart = later(self.last_restart, finished_at(container));
            let waiting = text(container, "/state/waiting/reason");
            let terminated = container.pointer("/state/terminated");
            if !waiting.is_empty() {
                self.reason = waiting.to_owned();
            } else if let Some(t) = terminated {
                self.reason = match text(t, "/reason") {
                    "" => exit_words("", t),
                    why => why.to_owned(),
                };
            } else if container.pointer("/ready") == Some(&Value::Bool(true))
                && container.pointer("/state/running").is_some()
            {
                running = true;
                self.ready += 1;
            }
        }
        // Still running a container: not Completed yet.
        if self.reason == "Completed" && running {
            let pod_ready = items(pod, "/status/conditions")
                .iter()
                .any(|c| text(c, "/type") == "Ready" && text(c, "/status") == "True");
            self.reason = if pod_ready { "Running" } else { "NotReady" }.to_owned();
        }
    }
}

/// The READINESS GATES column: how many of the pod's gates have passed.
fn readiness_gates(pod: &Value) -> String {
    let gates = items(pod, "/spec/readinessGates");
    if gates.is_empty() {
        return "<none>".to_owned();
    }
    let conditions = items(pod, "/status/conditions");
    let passed = gates
        .iter()
        .filter(|gate| {
            let wanted = text(gate, "/conditionType");
            conditions
                .iter()
                .find(|c| text(c, "/type") == wanted)
                .is_some_and(|c| text(c, "/status") == "True")
        })
        .count();
    format!("{passed}/{}", gates.len())
}

/// The `Completed` condition of a finished pod's row.
fn completed(reason: &str, message: &str) -> Value {
    json!([{ "type": "Completed", "status": "True", "reason": reason, "message": message }])
}

/// `Signal:9` or `ExitCode:1` (after `prefix`) for a container that ended
/// without a reason.
fn exit_words(prefix: &str, terminated: &Value) -> String {
    match number(terminated, "/signal") {
        0 => format!("{prefix}ExitCode:{}", number(terminated, "/exitCode")),
        signal => format!("{prefix}Signal:{signal}"),
    }
}

/// When the container last ended, if it did.
fn finished_at(container: &Value) -> Option<Timestamp> {
    let finished = container.pointer("/lastState/terminated/finishedAt")?;
    match parse_time(finished.as_str()?) {
        Time::At(at) => Some(at),
        Time::Zero | Time::Invalid => None,
    }
}

fn later(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2024-05-01T12:00:00Z".parse().unwrap()
    }

    fn status_of(pod: &Value) -> (String, String, String) {
        let row = cells(pod, now());
        let word = |i: usize| row.cells[i].as_str().unwrap().to_owned();
        (word(1), word(2), word(3))
    }

    fn running(name: &str, ready: bool) -> Value {
        json!({ "name": name, "ready": ready, "restartCount": 0, "state": { "running": {} } })
    }

    #[test]
    fn a_running_pod_counts_its_ready_containers() {
        let pod = json!({
            "metadata": { "name": "web-1", "creationTimestamp": "2024-05-01T11:58:00Z" },
            "spec": { "containers": [{ "name": "a" }, { "name": "b" }], "nodeName": "n1" },
            "status": {
                "phase": "Running",
                "podIPs": [{ "ip": "10.0.0.5" }],
                "containerStatuses": [running("a", true), running("b", false)],
            },
        });
        let row = cells(&pod, now());
        assert_eq!(
            row.cells,
            [
                json!("web-1"),
                json!("1/2"),
                json!("Running"),
                json!("0"),
                json!("2m"),
                json!("10.0.0.5"),
                json!("n1"),
                json!("<none>"),
                json!("<none>"),
            ]
        );
        assert_eq!(row.conditions, None);
    }

    #[test]
    fn restarts_say_when_the_last_one_was() {
        let pod = json!({
            "spec": { "containers": [{ "name": "a" }] },
            "status": { "phase": "Running", "containerStatuses": [{
                "name": "a", "restartCount": 4,
                "state": { "waiting": { "reason": "CrashLoopBackOff" } },
                "lastState": { "terminated": { "exitCode": 1, "finishedAt": "2024-05-01T11:55:00Z" } },
            }]},
        });
        assert_eq!(
            status_of(&pod),
            ("0/1".into(), "CrashLoopBackOff".into(), "4 (5m ago)".into())
        );
    }

    #[test]
    fn init_containers_show_their_progress() {
        let waiting = json!({
            "spec": { "initContainers": [{ "name": "i1" }, { "name": "i2" }], "containers": [{ "name": "a" }] },
            "status": { "phase": "Pending", "initContainerStatuses": [
                { "name": "i1", "state": { "terminated": { "exitCode": 0 } } },
                { "name": "i2", "state": { "waiting": { "reason": "PodInitializing" } } },
            ]},
        });
        assert_eq!(status_of(&waiting).1, "Init:1/2");
        let failing = json!({
            "spec": { "initContainers": [{ "name": "i1" }] },
            "status": { "phase": "Pending", "initContainerStatuses": [
                { "name": "i1", "state": { "terminated": { "exitCode": 2 } } },
            ]},
        });
        assert_eq!(status_of(&failing).1, "Init:ExitCode:2");
        // A sidecar (restartable init container) that started counts.
        let sidecar = json!({
            "spec": {
                "initContainers": [{ "name": "proxy", "restartPolicy": "Always" }],
                "containers": [{ "name": "a" }],
            },
            "status": {
                "phase": "Running",
                "conditions": [{ "type": "Initialized", "status": "True" }],
                "initContainerStatuses": [{ "name": "proxy", "started": true, "ready": true, "restartCount": 1, "state": { "running": {} } }],
                "containerStatuses": [running("a", true)],
            },
        });
        assert_eq!(
            status_of(&sidecar),
            ("2/2".into(), "Running".into(), "1".into())
        );
    }

    #[test]
    fn finished_and_deleted_pods_say_so() {
        let succeeded = json!({
            "spec": { "containers": [{ "name": "a" }] },
            "status": { "phase": "Succeeded", "containerStatuses": [
                { "name": "a", "state": { "terminated": { "exitCode": 0, "reason": "Completed" } } },
            ]},
        });
        let row = cells(&succeeded, now());
        assert_eq!(row.cells[2], "Completed");
        assert_eq!(row.conditions.unwrap()[0]["reason"], "Succeeded");
        let deleting = json!({
            "metadata": { "deletionTimestamp": "2024-05-01T11:59:00Z" },
            "spec": { "containers": [{ "name": "a" }] },
            "status": { "phase": "Running", "containerStatuses": [running("a", true)] },
        });
        assert_eq!(status_of(&deleting).1, "Terminating");
        let gated = json!({
            "status": { "phase": "Pending", "conditions": [{ "type": "PodScheduled", "reason": "SchedulingGated" }] },
        });
        assert_eq!(status_of(&gated).1, "SchedulingGated");
        let killed = json!({
            "spec": { "containers": [{ "name": "a" }] },
            "status": { "phase": "Failed", "containerStatuses": [
                { "name": "a", "state": { "terminated": { "exitCode": 137, "signal": 9 } } },
            ]},
        });
        assert_eq!(status_of(&killed).1, "Signal:9");
    }

    #[test]
    fn readiness_gates_count_the_conditions_that_hold() {
        let pod = json!({
            "spec": { "readinessGates": [{ "conditionType": "a" }, { "conditionType": "b" }] },
            "status": { "conditions": [{ "type": "a", "status": "True" }, { "type": "b", "status": "False" }] },
        });
        assert_eq!(cells(&pod, now()).cells[8], "1/2");
    }
}
