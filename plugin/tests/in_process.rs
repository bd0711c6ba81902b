//! Commands run in-process, their results written into memory through the context's output
//! (`Ctx::stdout`), and compared byte for byte with what the real binary prints on stdout for
//! the same arguments: one command of each kind (a plain print, a generated script, offline
//! commands that read files, and an offline command with its own exit-status table).

use std::path::PathBuf;
use std::process::Command as Process;

use clap::Parser;

use kubectl_promotion::cli::{Cli, Command};
use kubectl_promotion::commands::{self, Ctx};

/// What the binary prints on stdout, and its exit status, without colour.
fn binary(args: &[&str]) -> (Vec<u8>, Option<i32>) {
    let out = Process::new(env!("CARGO_BIN_EXE_kubectl-promotion"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run kubectl-promotion");
    (out.stdout, out.status.code())
}

/// The same command run in this process, its output captured.
fn in_process(args: &[&str]) -> (Vec<u8>, Option<i32>) {
    let cli = Cli::try_parse_from(std::iter::once("kubectl-promotion").chain(args.iter().copied()))
        .expect("arguments parse");
    let ctx = Ctx::in_memory();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let code = match &cli.command {
        Command::Version(a) => commands::version::run(&ctx, a),
        Command::Completion(a) => commands::completion::run(&ctx, a),
        Command::Describe(a) => rt.block_on(commands::describe::run(&ctx, a)),
        Command::Plan(a) => rt.block_on(commands::plan::run(&ctx, a)),
        Command::Health(a) => rt.block_on(commands::health::run(&ctx, a)),
        Command::Lint(a) => Ok(commands::lint::run(&ctx, a)),
        other => panic!("not an offline command: {other:?}"),
    }
    .expect("the command succeeds");
    (ctx.stdout.into_bytes(), Some(code.into()))
}

fn same(args: &[&str]) -> String {
    let (mem, mem_code) = in_process(args);
    let (bin, bin_code) = binary(args);
    assert_eq!(
        String::from_utf8_lossy(&mem),
        String::from_utf8_lossy(&bin),
        "{args:?}"
    );
    assert_eq!(mem_code, bin_code, "{args:?}");
    assert!(!mem.is_empty(), "{args:?} printed nothing");
    String::from_utf8(mem).expect("UTF-8 output")
}

fn example(file: &str) -> String {
    promotion_examples::examples_dir()
        .join(file)
        .display()
        .to_string()
}

fn fixture(file: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/health")
        .join(file)
        .display()
        .to_string()
}

#[test]
fn version_writes_into_the_context() {
    let out = same(&["version", "-o", "json"]);
    assert!(out.contains("\"version\""), "{out}");
    same(&["version", "--short"]);
}

#[test]
fn completion_writes_into_the_context() {
    let out = same(&["completion", "bash"]);
    assert!(
        out.starts_with("# bash completion for kubectl-promotion"),
        "{out}"
    );
}

#[test]
fn describe_of_a_file_writes_into_the_context() {
    let file = example("kyverno-rollout-auto.yaml");
    let out = same(&["describe", "-f", &file, "-o", "yaml"]);
    assert!(out.contains("kyverno-rollout"), "{out}");
    same(&["describe", "-f", &file]);
}

#[test]
fn plan_of_files_writes_into_the_context() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fleet = dir.path().join("fleet.yaml");
    std::fs::write(
        &fleet,
        "apiVersion: v1\nkind: List\nitems:\n\
         - apiVersion: lib.projectsveltos.io/v1beta1\n  kind: SveltosCluster\n  \
         metadata: {name: c1, namespace: ns, labels: {env: staging}}\n  status: {ready: true}\n",
    )
    .expect("write the fleet");
    let fleet = fleet.display().to_string();
    let file = example("kyverno-rollout-auto.yaml");
    let out = same(&["plan", "-f", &file, "--clusters", &fleet]);
    assert!(out.contains("ClusterPromotion"), "{out}");
    // --strict with hazards: plan's table says 1, in-process as from the binary.
    let (_, code) = in_process(&["plan", "-f", &file, "--clusters", &fleet, "--strict"]);
    assert_eq!(code, Some(1));
    same(&["plan", "-f", &file, "--clusters", &fleet, "--strict"]);
}

#[test]
fn health_of_files_writes_into_the_context() {
    let file = example("cert-manager-lua-checks.yaml");
    let args = [
        "health",
        "-f",
        &file,
        "--object",
        &fixture("cert-manager-unhealthy.yaml"),
        "--check",
        "deployment-health",
    ];
    let out = same(&args);
    assert!(out.contains("Deployment cert-manager/"), "{out}");
    // Unhealthy: health's own code 1, the same in-process.
    assert_eq!(in_process(&args).1, Some(1));
}

#[test]
fn lint_writes_its_findings_through_the_context() {
    let file = example("lua-syntax-error.yaml");
    let text = same(&["lint", &file]);
    assert!(text.contains("lua-syntax"), "{text}");
    let json = same(&["lint", &file, "-o", "json"]);
    assert!(json.trim_start().starts_with('['), "{json}");
}
