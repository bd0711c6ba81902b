mod commands;

fn main() -> std::process::ExitCode {
    std::process::ExitCode::SUCCESS
}
