//! The loop of one supervised run ([`drive`]): the child's output to [`Live`], the host's
//! input to the child, the user's signals ([`Interrupts`]), until the child's output ends.

use std::time::{Duration, Instant};

use agent_sdk_watchdog::RunPhase;

use super::host::sleep_until_opt;
use super::interrupts::Interrupts;
use super::live::Live;
use super::start::Child;
use super::stdin;

/// Drive `child`'s run until its output ends: each thing that is ready handed to its owner.
pub(super) async fn drive(live: &mut Live<'_>, child: &mut Child, signals: &mut Interrupts) {
    let mut phase = live.handle.phase();
    // Only a status line to redraw needs a periodic wake (a window's reset is one of the
    // policy's own deadlines); a plain run wakes for its I/O only.
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let look_at = live.host.stdout.look_at();
        let (room, in_flight) = (
            live.host.stdout.has_room(),
            live.host.stdout.in_flight() > 0,
        );
        tokio::select! {
            biased;
            // What we wrote to the child is recorded before what the child answered to it.
            note = stdin::recv_written(&mut child.written) => {
                if note.is_none() {
                    child.written = None;
                    live.host.vanished.input_ended();
                }
                live.record_written(note);
            }
            gone = live.host.vanished.gone() => live.on_gone(gone),
            // A kill or the child's end, known even while our reader takes nothing.
            r = phase.changed(), if live.ending.is_none() => match r {
                Ok(()) => {
                    let p = *phase.borrow_and_update();
                    live.on_phase(p);
                }
                Err(_) => live.on_phase(RunPhase::Stopping),
            },
            // The child's output, while our stdout has room for it: a reader that stops
            // reading holds the child back, and the kill, the signals and the end still come.
            out = child.sup.next_batch(), if room => match out {
                Some(out) => live.on_batch(out),
                None => return,
            },
            () = live.host.stdout.progressed(), if in_flight => {
                live.on_stdout_progress();
            }
            // While bytes wait for our stdout: did the reader take any?
            () = sleep_until_opt(look_at), if look_at.is_some() => live.look_at_stdout(),
            // Nothing else is ready: hand what the child printed to our stdout.
            () = std::future::ready(()), if !live.host.stdout.is_empty() => live.flush_stdout(),
            sig = live.host.signals.recv() => signals.on_signal(sig, live),
            () = signals.escalation() => signals.escalate(live),
            _ = tick.tick(), if live.needs_tick() => live.refresh_status(Instant::now()),
        }
    }
}
