use super::*;

#[test]
fn numbers_round_trip_and_unknown_values_stay_visible() {
    for n in 0..=9 {
        assert_eq!(RunStatus::from_number(n).number(), n);
    }
    assert_eq!(RunStatus::from_number(42), RunStatus::Unknown);
    assert!(!RunStatus::Unknown.is_terminal());
    assert_eq!(RunStatus::WaitingForInput.to_string(), "WAITING_FOR_INPUT");
}
