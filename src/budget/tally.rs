//! What the ledger holds against the cap (issue 33), pure: the spend (every request and
//! the latest line of each pod, as [`super::summary()`]) and the reservations still open,
//! kept up to date one line at a time, so a spender re-reading the ledger before each
//! request adds only the lines appended since.

use std::collections::BTreeMap;

use super::ledger::{LedgerLine, ReserveLine};

/// The ledger's spend and open reservations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    requests_usd: f64,
    /// The latest line of each pod, by run and pod: its cost and whether it is final.
    pods: BTreeMap<(String, String), (f64, bool)>,
    /// Reservations no line has settled yet, by ID.
    open: BTreeMap<String, ReserveLine>,
}

impl Tally {
    /// The tally of `lines`.
    #[must_use]
    pub fn of(lines: &[LedgerLine]) -> Self {
        let mut tally = Self::default();
        for line in lines {
            tally.add(line);
        }
        tally
    }

    /// Counts one more line: a request's cost (settling the reservation it names), a pod's
    /// latest spend (a `final` one settling its run's reservation), a reservation.
    pub fn add(&mut self, line: &LedgerLine) {
        match line {
            LedgerLine::Request(request) => {
                self.requests_usd += request.cost_usd.unwrap_or(0.0);
                if let Some(id) = &request.reservation {
                    self.open.remove(id);
                }
            }
            LedgerLine::Pod(pod) => {
                let key = (pod.run.clone(), pod.pod.clone());
                self.pods.insert(key, (pod.cost_usd, pod.r#final));
                if pod.r#final {
                    self.open.remove(&ReserveLine::pod_id(&pod.run));
                }
            }
            // A reservation of 0 releases the one of its ID (a pod's start that made
            // no pod).
            LedgerLine::Reserve(reserve) if reserve.usd <= 0.0 => {
                self.open.remove(&reserve.id);
            }
            LedgerLine::Reserve(reserve) => {
                self.open.insert(reserve.id.clone(), reserve.clone());
            }
        }
    }

    /// USD spent: every request and the latest line of each pod.
    #[must_use]
    pub fn spent(&self) -> f64 {
        self.requests_usd + self.pods.values().map(|(usd, _)| usd).sum::<f64>()
    }

    /// USD spent by the pods of run `run`.
    #[must_use]
    pub fn run_spent(&self, run: &str) -> f64 {
        self.pods
            .iter()
            .filter(|((r, _), _)| r == run)
            .map(|(_, (usd, _))| usd)
            .sum()
    }

    /// Whether pod `pod` of run `run` has its `final` line.
    #[must_use]
    pub fn is_final(&self, run: &str, pod: &str) -> bool {
        self.pods
            .get(&(run.to_owned(), pod.to_owned()))
            .is_some_and(|(_, last)| *last)
    }

    /// USD the open reservations hold beyond what is already spent: a request's worst
    /// case while its process lives (`alive`, given the process ID and when the line was
    /// written), a pod's cap less its run's spend so far;
    /// the reservation of run `except` left out (a run taken up again).
    #[must_use]
    pub fn reserved(
        &self,
        alive: impl Fn(u32, jiff::Timestamp) -> bool,
        except: Option<&str>,
    ) -> f64 {
        self.open
            .values()
            .map(|reserve| match (&reserve.run, reserve.pid) {
                (Some(run), _) if Some(run.as_str()) == except => 0.0,
                (Some(run), _) => (reserve.usd - self.run_spent(run)).max(0.0),
                (None, Some(pid)) if !alive(pid, reserve.at) => 0.0,
                (None, _) => reserve.usd,
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::ledger::{PodLine, RequestLine};

    fn reserve(id: &str, usd: f64, run: Option<&str>, pid: Option<u32>) -> LedgerLine {
        LedgerLine::Reserve(ReserveLine {
            at: jiff::Timestamp::now(),
            id: id.into(),
            usd,
            run: run.map(str::to_owned),
            pid,
        })
    }

    fn request(usd: f64, reservation: Option<&str>) -> LedgerLine {
        LedgerLine::Request(RequestLine {
            at: jiff::Timestamp::now(),
            stage: "answers".into(),
            provider: "p".into(),
            model: "m".into(),
            input_tokens: 1,
            output_tokens: 1,
            cost_usd: Some(usd),
            reservation: reservation.map(str::to_owned),
        })
    }

    #[test]
    fn a_reservation_holds_until_its_line_settles_it_or_its_process_is_gone() {
        let alive = |pid: u32, _: jiff::Timestamp| pid == 1;
        let mut tally = Tally::default();
        for line in [
            reserve("1-a", 0.5, None, Some(1)),
            reserve("2-a", 0.25, None, Some(2)),
            reserve("pod:r1", 2.0, Some("r1"), None),
        ] {
            tally.add(&line);
        }
        // The dead process's request holds nothing.
        assert!((tally.reserved(alive, None) - 2.5).abs() < 1e-12);
        tally.add(&request(0.1, Some("1-a")));
        assert!((tally.spent() - 0.1).abs() < 1e-12);
        assert!((tally.reserved(alive, None) - 2.0).abs() < 1e-12);
        // The pod's spend comes out of its reservation, not on top of it.
        tally.add(&LedgerLine::Pod(PodLine::new(
            ("r1", "p1"),
            1.0,
            1800.0,
            3600.0,
            false,
        )));
        assert!((tally.spent() - 0.6).abs() < 1e-12);
        assert!((tally.reserved(alive, None) - 1.5).abs() < 1e-12);
        assert!((tally.reserved(alive, Some("r1"))).abs() < 1e-12);
        assert!(!tally.is_final("r1", "p1"));
        // Its final line settles it.
        tally.add(&LedgerLine::Pod(PodLine::new(
            ("r1", "p1"),
            1.0,
            3600.0,
            3600.0,
            true,
        )));
        assert!(tally.is_final("r1", "p1"));
        assert!((tally.spent() - 1.1).abs() < 1e-12);
        assert!(tally.reserved(alive, None).abs() < 1e-12);
        // A reservation of 0 releases its ID.
        tally.add(&reserve("pod:r2", 1.0, Some("r2"), None));
        tally.add(&reserve("pod:r2", 0.0, Some("r2"), None));
        assert!(tally.reserved(alive, None).abs() < 1e-12);
    }
}
