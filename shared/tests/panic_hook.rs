//! The hook the fuzz targets put in front of libFuzzer's: a panic that `catch_expected` catches
//! unwinds without reaching the previous hook; any other panic, caught elsewhere or not, still
//! reaches it. One test in its own binary, because panic hooks are process-wide.

use std::panic::{catch_unwind, set_hook};
use std::sync::{Arc, Mutex};

use cel_check::panics::{catch_expected, is_caught, let_caught_panics_unwind};

#[test]
fn only_panics_outside_catch_expected_reach_the_previous_hook() {
    // Stands in for libFuzzer's hook (which would abort): records what reaches it.
    let reached: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = Arc::clone(&reached);
    set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .unwrap_or_default();
        record.lock().unwrap().push(message);
    }));
    let_caught_panics_unwind();

    assert!(!is_caught());
    let caught = catch_expected(|| -> u8 { panic!("expected") });
    assert!(
        caught.is_err(),
        "catch_expected returns the panic as an error"
    );
    assert!(!is_caught(), "the count is back to zero after a panic");

    let nested = catch_expected(|| catch_expected(|| -> u8 { panic!("nested") }).is_err());
    assert_eq!(nested.ok(), Some(true));
    assert!(!is_caught());

    assert_eq!(catch_expected(|| 7).ok(), Some(7));
    assert!(
        !is_caught(),
        "the count is back to zero after a normal return"
    );

    // A panic caught by a plain catch_unwind is a bug the safety net hides: it must be reported.
    let hidden = catch_unwind(|| -> u8 { panic!("unexpected") });
    assert!(hidden.is_err());

    // Another thread's expected panic says nothing about this thread.
    std::thread::scope(|s| {
        s.spawn(|| catch_expected(|| -> u8 { panic!("other thread") }).is_err());
        s.spawn(|| catch_unwind(|| -> u8 { panic!("other thread, unexpected") }).is_err());
    });

    let _ = std::panic::take_hook();
    let mut reached = reached.lock().unwrap().clone();
    reached.sort();
    assert_eq!(reached, ["other thread, unexpected", "unexpected"]);
}
