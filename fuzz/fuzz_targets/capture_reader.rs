//! The capture reader on arbitrary bytes: never panics; whatever it reads round-trips.
#![no_main]
use libfuzzer_sys::fuzz_target;
use watchdog_host::capture::Entry;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some(entry)) = Entry::parse(data) {
        let again = Entry::parse(entry.to_json().as_bytes())
            .expect("a written entry reads back")
            .expect("a written entry has a record");
        assert_eq!(again.t_ms, entry.t_ms);
    }
});
