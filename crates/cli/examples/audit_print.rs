fn main() {
    let args: Vec<std::path::PathBuf> = std::env::args_os().skip(1).map(Into::into).collect();
    let r = agent_watchdog::audit::audit_paths(&args, &watchdog_core::Limits::default());
    agent_watchdog::audit::render_text(&r, &mut std::io::stdout()).unwrap();
    for k in &r.would_kill {
        println!("{k:?}");
    }
}
