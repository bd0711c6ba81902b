use clap::Parser;

/// The admission path allocates many small objects (JSON trees, parser tokens) per request;
/// mimalloc serves them markedly faster than glibc's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    promotion_webhook::run(promotion_webhook::cli::Cli::parse())
}
