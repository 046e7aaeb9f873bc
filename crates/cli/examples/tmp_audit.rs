use clap::Parser;
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    a: agent_watchdog::audit::AuditArgs,
}
fn main() {
    let c = Cli::parse();
    let code =
        agent_watchdog::audit::run_audit(&c.a, &mut std::io::stdout(), &mut std::io::stderr())
            .unwrap();
    std::process::exit(code);
}
