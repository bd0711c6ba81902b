//! Run the stand-in Kubernetes API server by hand: loaded with the example manifests and the
//! Sveltos objects around them (and/or a generated data set for benchmarks), a kubeconfig
//! written where you say, until Ctrl-C.
//!
//! ```text
//! standin-apiserver --kubeconfig /tmp/standin.kubeconfig
//! KUBECONFIG=/tmp/standin.kubeconfig kubectl get clusterpromotions
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use promotion_e2e::apiserver::{AdmissionConfig, StandIn, StandInOptions};
use promotion_e2e::fixtures::{self, World};

#[derive(Parser)]
#[command(
    name = "standin-apiserver",
    about = "Stand-in Kubernetes API server loaded with the ClusterPromotion examples"
)]
struct Args {
    /// Where to write the kubeconfig (server URL, CA data, admin token, current context).
    #[arg(long)]
    kubeconfig: PathBuf,
    /// Load only these example files (by file name, repeatable); default: every example a real
    /// cluster could hold together.
    #[arg(long = "example", value_name = "FILE")]
    examples: Vec<String>,
    /// Load no example at all.
    #[arg(long, conflicts_with = "examples")]
    no_examples: bool,
    /// Also load a generated promotion `bench-rollout` with this many stages...
    #[arg(long, value_name = "N")]
    generate_stages: Option<usize>,
    /// ...and this many matching clusters (one ClusterSummary each).
    #[arg(long, value_name = "N", default_value_t = 0)]
    generate_clusters: usize,
    /// Start as a cluster without the ClusterPromotion CRD.
    #[arg(long)]
    without_promotion_crd: bool,
    /// Mutating webhook URL for ClusterPromotion writes (https).
    #[arg(long, requires = "webhook_ca")]
    mutate_url: Option<String>,
    /// Validating webhook URL for ClusterPromotion writes (https).
    #[arg(long, requires = "webhook_ca")]
    validate_url: Option<String>,
    /// PEM file with the CA that signed the webhook's serving certificate.
    #[arg(long, value_name = "FILE")]
    webhook_ca: Option<PathBuf>,
}

fn world(args: &Args) -> Result<World, String> {
    let mut world = World::default();
    if args.no_examples {
        // nothing
    } else if args.examples.is_empty() {
        let (w, skipped) = fixtures::default_world().map_err(|e| e.to_string())?;
        for (file, why) in skipped {
            eprintln!("skipped example {file}: {why}");
        }
        world.extend(w);
    } else {
        let mut b = fixtures::WorldBuilder::new();
        for file in &args.examples {
            b.add(fixtures::load_example(file).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
        }
        world.extend(b.build());
    }
    if let Some(stages) = args.generate_stages {
        world.extend(fixtures::generate(stages, args.generate_clusters));
    }
    Ok(world)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let world = match world(&args) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("standin-apiserver: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut options = StandInOptions::default().with_objects(world.objects);
    if args.without_promotion_crd {
        options = options.without_promotion_crd();
    }
    if let Some(ca_file) = &args.webhook_ca {
        let ca = match std::fs::read_to_string(ca_file) {
            Ok(ca) => ca,
            Err(e) => {
                eprintln!("standin-apiserver: reading {}: {e}", ca_file.display());
                return ExitCode::FAILURE;
            }
        };
        let mut admission = AdmissionConfig::new(&ca);
        admission.mutate_url = args.mutate_url.clone();
        admission.validate_url = args.validate_url.clone();
        options = options.with_admission(admission);
    }
    let server = match StandIn::start(options) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("standin-apiserver: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = server.write_kubeconfig_for(&args.kubeconfig, server.token(), "admin") {
        eprintln!(
            "standin-apiserver: writing {}: {e}",
            args.kubeconfig.display()
        );
        return ExitCode::FAILURE;
    }
    println!("{}", server.url());
    eprintln!(
        "stand-in API server on {}; kubeconfig in {}; Ctrl-C to stop",
        server.url(),
        args.kubeconfig.display()
    );
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("standin-apiserver: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = runtime.block_on(tokio::signal::ctrl_c()) {
        eprintln!("standin-apiserver: waiting for Ctrl-C: {e}");
    }
    server.shutdown();
    ExitCode::SUCCESS
}
