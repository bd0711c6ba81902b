//! `diff [NAME] -f FILE` and `diff NAME --stage S`, with `kubectl diff` conventions: exit 0 when
//! there is no difference, 1 when there is, >1 on error; `KUBECTL_EXTERNAL_DIFF` replaces the
//! built-in unified diff. The diff goes to stdout; the plain-words consequences to stderr (as
//! Flux does), so `diff > change.patch` stays a clean patch.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use serde_json::{Map, Value};

use crd_schema::Crd;
use promotion_manifest::Reader;
use promotion_shared::admission::{plan_mutation, removed_approvals, UserInfo};
use promotion_shared::diff::{
    appended_check_names, comparable_profile_spec, semantic_diff, Change, ChangeKind,
};
use promotion_shared::model::API_VERSION;
use promotion_shared::model::{stage_profile_name, ClusterPromotion, GROUP, KIND, VERSION};
use promotion_shared::revision;
use promotion_shared::rollout::{self, Restart};
use promotion_shared::validation::VALIDATION_STACK_BYTES;

use super::{lint, Ctx};
use crate::error::{exit::diff as exit, Error, Result};
use crate::render::output;
use crate::render::{self, Style, Tone};
use crate::view;

#[derive(Args, Debug)]
#[command(
    about = "Show what a manifest change or a promotion would change",
    long_about = "\
Two comparisons, with `kubectl diff` conventions (exit 0: no differences, 1: differences,
>1: error; KUBECTL_EXTERNAL_DIFF honoured; coloured unified YAML on a terminal):

  diff [NAME] -f FILE...   each ClusterPromotion in the files (several -f, multi-document
                    YAML, `kind: List`, directories of manifests) against the live object as
                    the server would store it (a server-side dry run, so defaults and the
                    admission webhook's mutations show), then the consequences: whether the
                    pipeline restarts from the first stage, every approval the update takes
                    away (who gave it, when, why), stages added or removed. A manifest the
                    server rejects is reported with all the server's causes. A manifest
                    `kubectl apply` would refuse (an unknown field, which the dry run
                    drops) is said first, with lint's findings, then its diff; it exits 2.
  diff NAME --stage S   what promoting past stage S changes at the next stage: the ClusterProfile
                    spec deployed at S against the one at the next stage, leaving out the
                    stage selector and the post-delay health checks Sveltos appends.",
    after_help = "\
Examples:
  kubectl promotion diff -f rollout.yaml
  kubectl promotion diff -f manifests/                  # every ClusterPromotion in the directory
  kubectl promotion diff kyverno-rollout -f rollout.yaml
  KUBECTL_EXTERNAL_DIFF=\"colordiff -N -u\" kubectl promotion diff -f rollout.yaml
  kubectl promotion diff kyverno-rollout --stage staging"
)]
pub struct DiffArgs {
    /// ClusterPromotion name (with -f: compare only that one; taken from the files otherwise)
    #[arg(value_name = "NAME", required_unless_present = "filename")]
    pub name: Option<String>,
    /// Manifest, or directory of manifests, to compare with the live objects ("-" reads
    /// stdin); may be repeated
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE",
        conflicts_with = "stage"
    )]
    pub filename: Vec<PathBuf>,
    /// With a directory in -f: its subdirectories too
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Show what promoting past this stage changes at the next stage
    #[arg(long, value_name = "STAGE", requires = "name")]
    pub stage: Option<String>,
}

pub const EXTERNAL_DIFF_ENV: &str = "KUBECTL_EXTERNAL_DIFF";

pub async fn run(ctx: &Ctx, args: &DiffArgs) -> Result<u8> {
    match (args.filename.as_slice(), &args.stage) {
        ([_, ..], _) => diff_files(ctx, args).await,
        ([], Some(stage)) => {
            let name = args
                .name
                .as_deref()
                .ok_or_else(|| Error::Usage("diff --stage needs NAME".into()))?;
            diff_stage(ctx, name, stage).await
        }
        ([], None) => Err(Error::Usage(
            "diff needs -f FILE (compare a manifest with the live object) or --stage STAGE \
             (what promoting past STAGE changes)"
                .into(),
        )),
    }
}

/// One ClusterPromotion read from the files, compared with the live object.
struct Compared {
    name: String,
    file: String,
    live_yaml: String,
    merged_yaml: String,
    consequences: Vec<String>,
}

/// Each ClusterPromotion of the files, with what `kubectl apply` would refuse in it (lint's
/// findings, [`lint::apply_refusals`]), judged on a thread with the stack validation needs.
fn read_promotions(args: &DiffArgs) -> Result<Vec<(String, Value, Vec<lint::Located>)>> {
    let crd = Crd::embedded();
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("diff-lint".into())
            .stack_size(VALIDATION_STACK_BYTES)
            .spawn_scoped(scope, || {
                super::manifests::promotions_judged(
                    &mut Reader::new(),
                    &args.filename,
                    args.recursive,
                    |file, entry| lint::apply_refusals(crd, file, entry),
                )
            })
            .map_err(|e| Error::Io(format!("cannot start the manifest check: {e}")))?
            .join()
            .unwrap_or_else(|_| {
                Err(Error::Io(
                    "the manifest check failed; this is a bug, please report it".into(),
                ))
            })
    })
}

/// Say that `kubectl apply` would refuse a manifest, with lint's findings, before its diff.
fn print_refusals(ctx: &Ctx, name: &str, file: &str, refusals: &[lint::Located]) {
    eprintln!(
        "{} kubectl apply would refuse ClusterPromotion {name:?} from {file} (as `kubectl \
         promotion lint {file}` reports); the diff shows the rest of it:",
        ctx.err.paint("error:", Tone::Bad)
    );
    for f in refusals {
        eprintln!("  {}", lint::render(f, ctx.err));
    }
}

async fn diff_files(ctx: &Ctx, args: &DiffArgs) -> Result<u8> {
    let mut found = read_promotions(args)?;
    if let Some(n) = &args.name {
        found
            .retain(|(_, doc, _)| doc.pointer("/metadata/name").and_then(Value::as_str) == Some(n));
        if found.is_empty() {
            return Err(Error::Usage(format!(
                "no ClusterPromotion {n:?} in {}",
                shown_paths(&args.filename)
            )));
        }
    }
    if found.is_empty() {
        return Err(Error::Usage(format!(
            "no ClusterPromotion (apiVersion config.projectsveltos.io/v1beta1) in {}",
            shown_paths(&args.filename)
        )));
    }
    // What apply would refuse comes first: it holds whatever the server's dry run (which drops
    // what it does not know instead of refusing it) shows below.
    let mut refused = false;
    for (file, doc, refusals) in &found {
        if !refusals.is_empty() {
            let name = doc
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            print_refusals(ctx, name, file, refusals);
            refused = true;
        }
    }
    let kube = ctx.kube().await?;
    let mut compared = Vec::new();
    for (file, doc, _) in &found {
        compared.push(compare(&kube, file, doc).await?);
    }
    let code = show_all(ctx, &compared)?;
    if code == exit::DIFFERENCES {
        for c in &compared {
            if c.live_yaml != c.merged_yaml {
                let title = if compared.len() > 1 {
                    format!("What applying {} ({}) does:", c.name, c.file)
                } else {
                    "What applying this does:".to_string()
                };
                print_consequences(&ctx.err, &title, &c.consequences);
            }
        }
    }
    // A manifest apply refuses is an error of the change, as `kubectl diff` exits >1 when the
    // server refuses one.
    if refused {
        return Ok(exit::DIFF_ERROR);
    }
    Ok(code)
}

fn shown_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The live object and what the server would store for `doc` (a server-side dry run), with the
/// consequences of the change.
async fn compare(
    kube: &crate::cluster::kube_client::Kube,
    file: &str,
    doc: &Value,
) -> Result<Compared> {
    let name = doc
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let live = match kube.get_promotion(&name).await {
        Ok(v) => Some(v),
        Err(Error::NotFound(_)) => None,
        Err(e) => return Err(e),
    };
    let dry_run = match &live {
        Some(live) => {
            let body = apply_body(live, doc);
            let mut requested = live.clone();
            json_patch::merge(&mut requested, &body);
            let requested = as_admission_sees(&requested);
            kube.merge_patch_dry_run(&name, &body)
                .await
                .map(|merged| (requested, merged))
        }
        None => kube
            .create_dry_run(doc)
            .await
            .map(|merged| (doc.clone(), merged)),
    };
    let (requested, merged) = dry_run.map_err(|e| rejected(e, file, &name))?;
    let live_yaml = match &live {
        Some(l) => output::to_yaml(&display_form(l))?,
        None => String::new(),
    };
    let merged_yaml = output::to_yaml(&display_form(&merged))?;
    let consequences = match &live {
        Some(live) => consequences(live, &requested, &merged),
        None => vec![format!(
            "{name} does not exist yet: creating it starts the pipeline at its first stage"
        )],
    };
    Ok(Compared {
        name,
        file: file.to_string(),
        live_yaml,
        merged_yaml,
        consequences,
    })
}

/// The object the admission webhook is handed for a write of `requested`: the API server decodes
/// it with the CRD's defaults first (a field the manifest leaves out, like `tier`, arrives
/// defaulted, so it is no change). The embedded CRD's defaults stand for the cluster's.
fn as_admission_sees(requested: &Value) -> Value {
    match Crd::embedded().version(API_VERSION) {
        Some(version) => version.decoded(requested),
        None => requested.clone(),
    }
}

/// A server-side dry run the server refuses: a rejection of the manifest, with every cause the
/// server gave, and the offline check that finds them before a cluster is involved.
fn rejected(err: Error, file: &str, name: &str) -> Error {
    let (by, message) = match err {
        Error::AdmissionDenied {
            webhook, message, ..
        } => (format!("admission webhook {webhook}"), message),
        Error::Api { message, .. } if message.ends_with("(422)") || message.ends_with("(400)") => {
            ("the API server".to_string(), message)
        }
        other => return other,
    };
    Error::Rejected {
        name: name.to_string(),
        file: file.to_string(),
        by,
        causes: causes(&message),
    }
}

/// The causes in an API server message: `… is invalid: [a: x, b: y]` or `… is invalid: a: x`.
fn causes(message: &str) -> Vec<String> {
    let message = message
        .trim_end_matches(" (422)")
        .trim_end_matches(" (400)");
    let Some((_, list)) = message.split_once(" is invalid: ") else {
        return vec![message.to_string()];
    };
    match list.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
        // Causes are "field: Type value: detail"; a cause starts where a field path does.
        Some(inner) => {
            let mut out: Vec<String> = Vec::new();
            for piece in inner.split(", ") {
                let starts_cause = piece
                    .split_once(": ")
                    .is_some_and(|(field, _)| !field.contains(' ') && field.contains('.'));
                match out.last_mut() {
                    Some(last) if !starts_cause => {
                        last.push_str(", ");
                        last.push_str(piece);
                    }
                    _ => out.push(piece.to_string()),
                }
            }
            out
        }
        None => vec![list.to_string()],
    }
}

/// The merge patch that makes the live object's spec exactly FILE's spec (removed fields are
/// nulled, lists are replaced) and adds FILE's labels and annotations, which is what
/// `kubectl apply` of FILE amounts to for this resource.
pub fn apply_body(live: &Value, file: &Value) -> Value {
    let mut body = Map::new();
    let mut meta = Map::new();
    for key in ["labels", "annotations"] {
        if let Some(m) = file
            .pointer(&format!("/metadata/{key}"))
            .filter(|m| m.is_object())
        {
            meta.insert(key.into(), m.clone());
        }
    }
    if !meta.is_empty() {
        body.insert("metadata".into(), Value::Object(meta));
    }
    let empty = Value::Object(Map::new());
    let live_spec = live.get("spec").unwrap_or(&empty);
    let file_spec = file.get("spec").unwrap_or(&empty);
    body.insert("spec".into(), merge_patch_between(live_spec, file_spec));
    Value::Object(body)
}

/// RFC 7386 patch turning `from` into `to`.
pub fn merge_patch_between(from: &Value, to: &Value) -> Value {
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => {
            let mut out = Map::new();
            for (k, va) in a {
                match b.get(k) {
                    None => {
                        out.insert(k.clone(), Value::Null);
                    }
                    Some(vb) if vb != va => {
                        out.insert(k.clone(), merge_patch_between(va, vb));
                    }
                    Some(_) => {}
                }
            }
            for (k, vb) in b {
                if !a.contains_key(k) {
                    out.insert(k.clone(), vb.clone());
                }
            }
            Value::Object(out)
        }
        _ => to.clone(),
    }
}

/// What a person compares: no managedFields, no resourceVersion churn.
fn display_form(object: &Value) -> Value {
    let mut o = output::without_managed_fields(object);
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
    o
}

/// Print the diffs (built-in, or one run of the external program over the LIVE and MERGED
/// directories, as kubectl does) and return 0 or 1.
fn show_all(ctx: &Ctx, compared: &[Compared]) -> Result<u8> {
    if let Some(cmd) = std::env::var(EXTERNAL_DIFF_ENV)
        .ok()
        .filter(|c| !c.trim().is_empty())
    {
        let files: Vec<(String, &str, &str)> = compared
            .iter()
            .map(|c| {
                (
                    file_name(&c.name),
                    c.live_yaml.as_str(),
                    c.merged_yaml.as_str(),
                )
            })
            .collect();
        return external(&cmd, &files);
    }
    let mut text = String::new();
    for c in compared {
        let file = file_name(&c.name);
        text.push_str(&render::diff::unified(
            &c.live_yaml,
            &c.merged_yaml,
            &format!("LIVE/{file}"),
            &format!("MERGED/{file}"),
            &ctx.out,
        ));
    }
    if text.is_empty() {
        return Ok(exit::OK);
    }
    ctx.write_out(&text)?;
    Ok(exit::DIFFERENCES)
}

/// kubectl's file name for an object in the LIVE/MERGED directories.
fn file_name(name: &str) -> String {
    format!("{GROUP}.{VERSION}.{KIND}..{name}")
}

/// Run `KUBECTL_EXTERNAL_DIFF` as kubectl does: the variable is split on spaces into a program
/// and its arguments, and the two directories (one file per object) are appended.
fn external(cmd: &str, files: &[(String, &str, &str)]) -> Result<u8> {
    let io = |e: std::io::Error| Error::Io(format!("{EXTERNAL_DIFF_ENV}: {e}"));
    let live = tempfile::Builder::new()
        .prefix("LIVE-")
        .tempdir()
        .map_err(io)?;
    let merged = tempfile::Builder::new()
        .prefix("MERGED-")
        .tempdir()
        .map_err(io)?;
    for (file, old, new) in files {
        if !old.is_empty() {
            std::fs::write(live.path().join(file), old).map_err(io)?;
        }
        std::fs::write(merged.path().join(file), new).map_err(io)?;
    }
    let mut parts = cmd.split_whitespace();
    let program = parts.next().unwrap_or("diff");
    let status = std::process::Command::new(program)
        .args(parts)
        .arg(live.path())
        .arg(merged.path())
        .status()
        .map_err(|e| {
            Error::Io(format!(
                "{EXTERNAL_DIFF_ENV}={cmd:?}: cannot run {program}: {e}"
            ))
        })?;
    match status.code() {
        Some(0) => Ok(exit::OK),
        Some(1) => Ok(exit::DIFFERENCES),
        Some(c) => Err(Error::Io(format!(
            "{EXTERNAL_DIFF_ENV}={cmd:?} failed (exit status {c})"
        ))),
        None => Err(Error::Io(format!(
            "{EXTERNAL_DIFF_ENV}={cmd:?} was killed by a signal"
        ))),
    }
}

fn print_consequences(style: &Style, title: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    eprintln!();
    eprintln!("{}", style.paint(title, Tone::Strong));
    for l in lines {
        eprintln!("  • {l}");
    }
}

fn stage_names(p: &ClusterPromotion) -> Vec<String> {
    p.spec.stages.iter().map(|s| s.name.clone()).collect()
}

/// Plain-words consequences of replacing `live` by the request (before admission) `requested`,
/// stored as `merged`.
pub fn consequences(live: &Value, requested: &Value, merged: &Value) -> Vec<String> {
    let (Ok(old), Ok(new)) = (view::typed(live), view::typed(merged)) else {
        return vec!["cannot interpret the objects as ClusterPromotions".into()];
    };
    let mut out = Vec::new();
    let first = new
        .spec
        .stages
        .first()
        .map(|s| s.name.clone())
        .unwrap_or_default();
    let old_names = stage_names(&old);
    let new_names = stage_names(&new);
    match rollout::restart_of(live, merged) {
        Some(Restart::ProfileSpec { fields, reordered }) => {
            let empty = Value::Null;
            let changes = semantic_diff(
                live.pointer("/spec/profileSpec").unwrap_or(&empty),
                merged.pointer("/spec/profileSpec").unwrap_or(&empty),
            );
            // The readable diff matches list elements by identity; a list whose only change is
            // its order shows no element change, so name it.
            let mut parts: Vec<String> = Vec::new();
            if !changes.is_empty() {
                parts.push(summarize(&changes));
            }
            parts.extend(
                reordered
                    .iter()
                    .map(|f| format!("{f} reordered (Sveltos hashes this list in order)")),
            );
            if parts.is_empty() {
                parts.push(fields.join(", "));
            }
            out.push(format!(
                "the pipeline restarts from the first stage ({first}): spec.profileSpec changes ({}); \
                 later stages keep the current spec until they are promoted again",
                parts.join("; ")
            ));
        }
        Some(Restart::Stages) => out.push(format!(
            "the pipeline restarts from the first stage ({first}): stage names, order or \
             selectors change"
        )),
        None => out.push(
            "the pipeline does not restart (only triggers, the order of lists Sveltos sorts, or \
             other fields change)"
                .to_string(),
        ),
    }
    let added: Vec<&String> = new_names
        .iter()
        .filter(|n| !old_names.contains(n))
        .collect();
    let removed: Vec<&String> = old_names
        .iter()
        .filter(|n| !new_names.contains(n))
        .collect();
    if !added.is_empty() {
        out.push(format!("stages added: {}", join(&added)));
    }
    if !removed.is_empty() {
        let profiles: Vec<String> = removed
            .iter()
            .map(|s| stage_profile_name(old.name(), s))
            .collect();
        out.push(format!(
            "stages removed: {} (Sveltos deletes their ClusterProfiles {}, and with them what \
             they deployed)",
            join(&removed),
            profiles.join(", ")
        ));
    }
    // What the webhook will say: every approval the update takes away, with its record.
    for removed in removed_approvals(live, requested) {
        out.push(removed.warning());
    }
    let user = UserInfo {
        username: Some("you".into()),
        ..UserInfo::default()
    };
    let plan = plan_mutation(Some(live), requested, &user, chrono::Utc::now());
    for stage in &plan.recorded_approvals {
        out.push(format!(
            "this approves stage {stage} (recorded as yours by the admission webhook); keep \
             `approved` out of manifests in git and use `kubectl promotion approve`"
        ));
    }
    out
}

fn join(items: &[&String]) -> String {
    items
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn summarize(changes: &[Change]) -> String {
    let shown: Vec<String> = changes.iter().take(3).map(change_line).collect();
    let more = changes.len().saturating_sub(3);
    if more > 0 {
        format!("{}, and {more} more", shown.join("; "))
    } else {
        shown.join("; ")
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) if !s.contains('\n') => s.clone(),
        Value::String(_) => "(multi-line text)".into(),
        Value::Object(_) | Value::Array(_) => "{…}".into(),
        other => other.to_string(),
    }
}

pub fn change_line(c: &Change) -> String {
    match c.kind {
        ChangeKind::Changed => format!(
            "{}: {} → {}",
            c.path,
            c.from.as_ref().map(scalar).unwrap_or_default(),
            c.to.as_ref().map(scalar).unwrap_or_default()
        ),
        ChangeKind::Added => format!("{} added", c.path),
        ChangeKind::Removed => format!("{} removed", c.path),
    }
}

async fn diff_stage(ctx: &Ctx, name: &str, stage: &str) -> Result<u8> {
    let kube = ctx.kube().await?;
    let object = kube.get_promotion(name).await?;
    let p = view::typed(&object)?;
    let Some(index) = p.stage_index(stage) else {
        return Err(Error::Usage(format!(
            "{name:?} has no stage {stage:?} (stages: {})",
            stage_names(&p).join(", ")
        )));
    };
    let Some(next) = p.spec.stages.get(index + 1) else {
        return Err(Error::Usage(format!(
            "{stage:?} is the last stage of {name:?}: nothing is promoted past it"
        )));
    };
    let here = &p.spec.stages[index];
    let profiles = kube.list_promotion_profiles().await?;
    let (from, to, notes) = stage_specs(&p, &object, &profiles, here, next);
    // Keys sorted: the two profiles were written at different times, and member order is not
    // a difference.
    let old = output::to_yaml(&output::sorted(&from))?;
    let new = output::to_yaml(&output::sorted(&to))?;
    let changes = semantic_diff(&from, &to);
    let next_profile = stage_profile_name(name, &next.name);
    let mut err = std::io::stderr().lock();
    for n in notes {
        let _ = writeln!(err, "{}", ctx.err.paint(&n, Tone::Dim));
    }
    if changes.is_empty() {
        let _ = writeln!(
            err,
            "promoting {stage} → {} changes nothing: {} already has the spec {stage} runs",
            next.name, next.name
        );
        return Ok(exit::OK);
    }
    let _ = writeln!(
        err,
        "{}",
        ctx.err.paint(
            &format!(
                "Promoting {stage} → {} changes {} (ClusterProfile {next_profile}):",
                next.name, next.name
            ),
            Tone::Strong
        )
    );
    for c in &changes {
        let (mark, tone) = match c.kind {
            ChangeKind::Added => ("+", Tone::Good),
            ChangeKind::Removed => ("-", Tone::Bad),
            ChangeKind::Changed => ("~", Tone::Waiting),
        };
        let _ = writeln!(err, "  {} {}", ctx.err.paint(mark, tone), change_line(c));
    }
    let _ = writeln!(err);
    drop(err);
    let from_label = format!(
        "{}/spec (stage {})",
        stage_profile_name(name, &next.name),
        next.name
    );
    let to_label = format!("{name}/spec.profileSpec (what {} receives)", next.name);
    if let Some(cmd) = std::env::var(EXTERNAL_DIFF_ENV)
        .ok()
        .filter(|c| !c.trim().is_empty())
    {
        return external(&cmd, &[(next_profile.clone(), old.as_str(), new.as_str())]);
    }
    let text = render::diff::unified(&old, &new, &from_label, &to_label, &ctx.out);
    ctx.write_out(&text)?;
    Ok(exit::DIFFERENCES)
}

/// The comparable specs (next stage now → what it receives), plus notes on where they came from.
/// What the next stage receives is `spec.profileSpec`, whatever `here` runs: the reconciler
/// applies the spec's configuration to every stage it promotes to. After a spec change restarted
/// the pipeline, `here` may still run a previous rollout's configuration (not reached yet in this
/// one); that is said, never offered as what the next stage gets.
fn stage_specs(
    p: &ClusterPromotion,
    object: &Value,
    profiles: &[Value],
    here: &promotion_shared::model::Stage,
    next: &promotion_shared::model::Stage,
) -> (Value, Value, Vec<String>) {
    // Only a profile that belongs to this promotion: a colliding name is another's.
    // Only which profiles are owned is used here, not why the others are taken.
    let owned = view::StageProfiles::of(p, profiles, &view::Owners::default());
    let profile_spec = p.spec.profile_spec.as_ref();
    let mut notes = Vec::new();
    let spec = object
        .pointer("/spec/profileSpec")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    match owned.owned.get(&here.name) {
        None => notes.push(format!(
            "stage {} has no ClusterProfile yet: {} receives spec.profileSpec when the pipeline \
             gets there",
            here.name, next.name
        )),
        Some(profile) if revision::runs_the_spec(profile, object) == Some(false) => {
            notes.push(format!(
                "stage {} runs a previous rollout's configuration ({}): this rollout has not \
                 reached it yet; {} receives spec.profileSpec, shown below",
                here.name,
                revision::change(profile.get("spec"), Some(&spec)),
                next.name
            ))
        }
        Some(_) => {}
    }
    let to = comparable_profile_spec(&spec, &BTreeSet::new());
    let from = match owned.owned.get(&next.name).and_then(|v| v.get("spec")) {
        Some(spec) => comparable_profile_spec(spec, &appended_check_names(next, profile_spec)),
        None => {
            notes.push(format!(
                "stage {} has no ClusterProfile yet: everything is new to it",
                next.name
            ));
            Value::Object(Map::new())
        }
    };
    (from, to, notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_replaces_spec_exactly() {
        let live = json!({"spec": {"profileSpec": {"tier": 100, "syncMode": "Continuous"},
                                   "stages": [{"name": "a"}, {"name": "b"}],
                                   "preserveClusterProfilesOnDelete": true}});
        let file = json!({"metadata": {"labels": {"team": "x"}},
                          "spec": {"profileSpec": {"syncMode": "OneTime"},
                                   "stages": [{"name": "a"}]}});
        let body = apply_body(&live, &file);
        let mut result = live.clone();
        json_patch::merge(&mut result, &body);
        assert_eq!(result["spec"], file["spec"]);
        assert_eq!(result["metadata"]["labels"]["team"], "x");
    }

    fn promo(profile: Value, stages: Value, approved_staging: Option<bool>) -> Value {
        let mut manual = json!({});
        if let Some(a) = approved_staging {
            manual["approved"] = json!(a);
        }
        let mut v = json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterPromotion",
            "metadata": {"name": "p"},
            "spec": {"profileSpec": profile, "stages": stages},
            "status": {"stages": [{"name": "dev"}, {"name": "staging"}]}
        });
        if let Some(st) = v["spec"]["stages"]
            .as_array_mut()
            .and_then(|s| s.get_mut(1))
        {
            st["trigger"] = json!({"manual": manual});
        }
        v
    }

    fn three() -> Value {
        json!([
            {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}},
            {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}}},
            {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}}
        ])
    }

    #[test]
    fn profile_change_restarts_and_resets_pending_approvals() {
        let live = promo(
            json!({"helmCharts": [{"releaseNamespace": "k", "releaseName": "r",
                                               "chartVersion": "1"}]}),
            three(),
            Some(true),
        );
        let new = promo(
            json!({"helmCharts": [{"releaseNamespace": "k", "releaseName": "r",
                                              "chartVersion": "2"}]}),
            three(),
            Some(true),
        );
        let lines = consequences(&live, &new, &new);
        assert!(
            lines[0].starts_with("the pipeline restarts from the first stage (dev): spec.profileSpec changes (helmCharts[k/r].chartVersion: 1 → 2)"),
            "{lines:?}"
        );
        // Word for word what the admission webhook will warn.
        assert_eq!(
            lines[1],
            "approval of stage \"staging\" (no record of who gave it) reset: spec.profileSpec \
             changed, the new rollout needs a new approval"
        );
    }

    #[test]
    fn an_apply_without_approved_names_the_approval_it_takes_away() {
        let mut live = promo(json!({}), three(), Some(true));
        live["metadata"]["annotations"] = json!({"audit.kubectl-promotion.dev/approvals":
            "{\"staging\":{\"user\":\"alice\",\"time\":\"2026-03-01T12:00:00Z\",\"reason\":\"CAB-1\"}}"});
        let mut new = live.clone();
        new["spec"]["stages"][1]["trigger"]["manual"]
            .as_object_mut()
            .unwrap()
            .remove("approved");
        let lines = consequences(&live, &new, &new);
        assert!(
            lines.contains(
                &"approval of stage \"staging\" (given by alice at 2026-03-01T12:00:00Z: \
                  \"CAB-1\") removed by this update"
                    .to_string()
            ),
            "{lines:?}"
        );
    }

    #[test]
    fn a_rejection_lists_every_cause() {
        let message = "ClusterPromotion.config.projectsveltos.io \"p\" is invalid: \
                       [spec.stages[1].trigger: Invalid value: \"object\": both, set, spec.x: \
                       Unsupported value: \"a\"] (422)";
        assert_eq!(
            causes(message),
            [
                "spec.stages[1].trigger: Invalid value: \"object\": both, set",
                "spec.x: Unsupported value: \"a\""
            ]
        );
        assert_eq!(
            causes("ClusterPromotion.config.projectsveltos.io \"p\" is invalid: spec.a: Required value (422)"),
            ["spec.a: Required value"]
        );
    }

    #[test]
    fn stages_added_and_removed() {
        let live = promo(json!({}), three(), None);
        let mut stages = three();
        stages.as_array_mut().unwrap().remove(2);
        stages
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "qa", "clusterSelector": {}}));
        let new = promo(json!({}), stages, None);
        let lines = consequences(&live, &new, &new);
        assert!(
            lines[0].contains("stage names, order or selectors change"),
            "{lines:?}"
        );
        assert!(lines.contains(&"stages added: qa".to_string()), "{lines:?}");
        assert!(lines.iter().any(
            |l| l.starts_with("stages removed: prod (Sveltos deletes their ClusterProfiles p-prod")
        ));
    }

    #[test]
    fn trigger_only_changes_do_not_restart() {
        let live = promo(json!({}), three(), Some(false));
        let new = promo(json!({}), three(), Some(true));
        let lines = consequences(&live, &new, &new);
        assert!(lines[0].contains("does not restart"), "{lines:?}");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("this approves stage staging")),
            "{lines:?}"
        );
    }

    #[test]
    fn file_names_follow_kubectl() {
        assert_eq!(
            file_name("p"),
            "config.projectsveltos.io.v1beta1.ClusterPromotion..p"
        );
    }
}
