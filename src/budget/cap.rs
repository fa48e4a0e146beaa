//! The hard cap's arithmetic (issue 20), pure: [`Gate`] admits a request only when the
//! spend so far, the worst cases of the requests in flight and its own worst case stay
//! within the cap; once it refuses, it stays closed, so no request starts after the
//! first one that could pass the cap. Settling a request replaces its worst case by its
//! cost and says when the spend first reaches the warning share.

/// A cap in USD and the share of it that warns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cap {
    /// `budget.max_usd`.
    pub max_usd: f64,
    /// `budget.warn_at`, a share in 0..=1.
    pub warn_at: f64,
}

/// Why the gate refused a request: the figures at that moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapReached {
    /// USD spent (the ledger's sum and this command's settled requests).
    pub spent: f64,
    /// USD reserved by the requests in flight (their worst cases).
    pub in_flight: f64,
    /// The worst case of the request refused.
    pub next: f64,
    /// The cap.
    pub max_usd: f64,
}

/// The gate of one command's requests.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    cap: Option<Cap>,
    spent: f64,
    in_flight: f64,
    closed: Option<CapReached>,
    warned: bool,
}

impl Gate {
    /// A gate over `spent` USD already spent, with `cap` (none: every request passes).
    #[must_use]
    pub fn new(cap: Option<Cap>, spent: f64) -> Self {
        Self {
            cap,
            spent,
            in_flight: 0.0,
            closed: None,
            warned: false,
        }
    }

    /// The USD spent so far.
    #[must_use]
    pub fn spent(&self) -> f64 {
        self.spent
    }

    /// Sets the spend and the worst cases in flight to what the ledger holds now (issue
    /// 33: every spender's, this command's own reservations among them).
    pub fn observe(&mut self, spent: f64, in_flight: f64) {
        self.spent = spent;
        self.in_flight = in_flight;
    }

    /// What the gate refused, once it has.
    #[must_use]
    pub fn closed(&self) -> Option<CapReached> {
        self.closed
    }

    /// What remains of the cap after the spend and the requests in flight; `None` without a
    /// cap.
    #[must_use]
    pub fn remaining(&self) -> Option<f64> {
        self.cap
            .map(|cap| (cap.max_usd - self.spent - self.in_flight).max(0.0))
    }

    /// Admits a request whose cost is at most `worst` USD (`None`: unpriced, which only
    /// an `allow_unpriced` budget lets through, and counts as nothing known), reserving
    /// it; returns the amount reserved, to hand back to [`Gate::settle`].
    ///
    /// # Errors
    ///
    /// [`CapReached`] when the request could pass the cap, or the gate refused before.
    pub fn reserve(&mut self, worst: Option<f64>) -> Result<f64, CapReached> {
        if let Some(reached) = self.closed {
            return Err(reached);
        }
        let (Some(cap), Some(worst)) = (self.cap, worst) else {
            return Ok(0.0);
        };
        if self.spent + self.in_flight + worst > cap.max_usd {
            let reached = CapReached {
                spent: self.spent,
                in_flight: self.in_flight,
                next: worst,
                max_usd: cap.max_usd,
            };
            self.closed = Some(reached);
            return Err(reached);
        }
        self.in_flight += worst;
        Ok(worst)
    }

    /// Settles a request that reserved `reserved` and cost `cost` (`None`: unknown);
    /// returns the spend and the cap the first time the spend reaches the warning share.
    pub fn settle(&mut self, reserved: f64, cost: Option<f64>) -> Option<(f64, f64)> {
        self.in_flight = (self.in_flight - reserved).max(0.0);
        self.spent += cost.unwrap_or(0.0);
        self.warning()
    }

    /// The spend and the cap, the first time the spend is at or past the warning share.
    pub fn warning(&mut self) -> Option<(f64, f64)> {
        let cap = self.cap?;
        if self.warned || self.spent < cap.warn_at * cap.max_usd {
            return None;
        }
        self.warned = true;
        Some((self.spent, cap.max_usd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capped(max_usd: f64, spent: f64) -> Gate {
        Gate::new(
            Some(Cap {
                max_usd,
                warn_at: 0.8,
            }),
            spent,
        )
    }

    #[test]
    fn the_gate_admits_while_spend_plus_in_flight_worst_cases_stay_within_the_cap() {
        let mut gate = capped(1.0, 0.2);
        assert_eq!(gate.reserve(Some(0.3)), Ok(0.3));
        assert_eq!(gate.reserve(Some(0.5)), Ok(0.5));
        // 0.2 spent + 0.8 in flight: nothing more fits, not even a cent.
        let refused = gate.reserve(Some(0.01)).unwrap_err();
        assert_eq!(
            refused,
            CapReached {
                spent: 0.2,
                in_flight: 0.8,
                next: 0.01,
                max_usd: 1.0
            }
        );
        // Once closed it stays closed, even when the requests in flight cost little.
        assert_eq!(gate.settle(0.3, Some(0.05)), None);
        assert_eq!(gate.reserve(Some(0.01)), Err(refused));
        assert!((gate.spent() - 0.25).abs() < 1e-12);
    }

    #[test]
    fn a_request_exactly_at_the_cap_passes_and_one_cent_more_does_not() {
        let mut gate = capped(1.0, 0.5);
        assert_eq!(gate.reserve(Some(0.5)), Ok(0.5));
        let mut gate = capped(1.0, 0.5);
        assert!(gate.reserve(Some(0.51)).is_err());
    }

    #[test]
    fn without_a_cap_or_a_price_nothing_is_reserved() {
        let mut gate = Gate::new(None, 100.0);
        assert_eq!(gate.reserve(Some(1e9)), Ok(0.0));
        assert_eq!(gate.remaining(), None);
        let mut gate = capped(1.0, 0.0);
        assert_eq!(gate.reserve(None), Ok(0.0));
        assert_eq!(gate.settle(0.0, None), None);
        assert!(gate.spent().abs() < 1e-12);
    }

    #[test]
    fn the_warning_comes_once_when_the_spend_reaches_the_share() {
        let mut gate = capped(10.0, 7.0);
        assert_eq!(gate.warning(), None);
        let reserved = gate.reserve(Some(2.0)).unwrap();
        assert_eq!(gate.remaining(), Some(1.0));
        assert_eq!(gate.settle(reserved, Some(1.0)), Some((8.0, 10.0)));
        let reserved = gate.reserve(Some(1.0)).unwrap();
        assert_eq!(gate.settle(reserved, Some(0.5)), None);
        // Past the share at the start: the first look warns.
        assert_eq!(capped(10.0, 9.0).warning(), Some((9.0, 10.0)));
    }
}
