//! kdi on a terminal, as a person runs it: stderr a pseudo-terminal (made
//! by util-linux's `script`), stdout a file. Sync progress is drawn as
//! bars, which make way for the lines that stay; failures are sentences.

use std::process::Stdio;

use super::{DEADLINE, documented_exit, kubeconfig};
use crate::support::{self, User};

/// What a run on a terminal left: its exit code, what the terminal
/// received, and stdout.
struct OnTerminal {
    code: Option<i32>,
    terminal: String,
    stdout: String,
}

/// Runs kdi with `args` as `user`, stderr on a pseudo-terminal; `None`
/// where `script` is not installed.
async fn on_terminal(user: User, args: &[&str]) -> Option<OnTerminal> {
    let dir = std::env::temp_dir().join(format!("kdi-terminal-{}", support::suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("stdout");
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let line = format!(
        "{} --kubeconfig '{}' {} > '{}'",
        env!("CARGO_BIN_EXE_kdi"),
        kubeconfig(user).display(),
        quoted.join(" "),
        out.display()
    );
    let run = tokio::process::Command::new("script")
        .args(["--quiet", "--return", "--command", &line, "/dev/null"])
        .env("TERM", "xterm")
        .env("SHELL", "/bin/sh")
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let ran = match tokio::time::timeout(DEADLINE, run).await {
        Ok(Ok(ran)) => ran,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Ok(Err(e)) => panic!("running script: {e}"),
        Err(_) => panic!("kdi {args:?} on a terminal did not end within {DEADLINE:?}"),
    };
    let stdout = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    Some(OnTerminal {
        code: ran.status.code(),
        terminal: String::from_utf8_lossy(&ran.stdout).into_owned(),
        stdout,
    })
}

fn skipped() {
    eprintln!("skipped: no `script` (util-linux) to give kdi a terminal");
}

#[tokio::test]
async fn a_terminal_sees_bars_then_the_lines_that_stay_and_stdout_the_objects() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "cli-terminal").await;
    super::config_map(&client, &ns, "shown").await;
    let Some(run) = on_terminal(
        User::Admin,
        &["get", "-r", "configmaps", "-n", &ns, "-o", "name"],
    )
    .await
    else {
        return skipped();
    };
    let said = &run.terminal;
    assert_eq!(run.code, Some(documented_exit("Success")), "{said}");
    assert!(
        run.stdout.contains(&format!("{ns}/shown")),
        "{}",
        run.stdout
    );
    // The bar, then the line that stays; no line per step.
    assert!(said.contains("configmaps  "), "a bar: {said:?}");
    assert!(said.contains("kdi: configmaps: synced, "), "{said:?}");
    assert!(!said.contains("kdi: configmaps: syncing"), "{said:?}");
    assert!(!said.contains("{\""), "no JSON on a terminal: {said:?}");
}

#[tokio::test]
async fn a_refusal_is_a_sentence_on_a_terminal() {
    let Some(run) = on_terminal(User::Alice, &["get", "-r", "configmaps,secrets"]).await else {
        return skipped();
    };
    let said = &run.terminal;
    assert_eq!(run.code, Some(documented_exit("access denied")), "{said}");
    assert!(
        said.contains("kdi: configmaps: access denied: ")
            || said.contains("kdi: secrets: access denied: "),
        "{said:?}"
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}
