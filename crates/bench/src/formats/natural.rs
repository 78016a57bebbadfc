//! Natural order of labels: `gd2` before `gd10`.

use std::cmp::Ordering;

/// Compares two labels with runs of ASCII digits taken as numbers
/// (`gd2 < gd10`, `a9b < a10a`) and everything else character by
/// character. Labels that differ only in leading zeros (`gd01`, `gd1`) are
/// ordered by plain string comparison, so the order is total and equal
/// only for equal strings.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a, b);
    loop {
        match (x.chars().next(), y.chars().next()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(cx), Some(cy)) if cx.is_ascii_digit() && cy.is_ascii_digit() => {
                let (nx, rest_x) = split_digits(x);
                let (ny, rest_y) = split_digits(y);
                let order = compare_numbers(nx, ny);
                if order != Ordering::Equal {
                    return order;
                }
                (x, y) = (rest_x, rest_y);
            }
            (Some(cx), Some(cy)) => {
                if cx != cy {
                    return cx.cmp(&cy);
                }
                (x, y) = (&x[cx.len_utf8()..], &y[cy.len_utf8()..]);
            }
        }
    }
}

/// The leading run of ASCII digits and the rest.
fn split_digits(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    s.split_at(end)
}

/// Compares digit strings as numbers of any length.
fn compare_numbers(x: &str, y: &str) -> Ordering {
    let (x, y) = (x.trim_start_matches('0'), y.trim_start_matches('0'));
    x.len().cmp(&y.len()).then_with(|| x.cmp(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_in_labels_compare_by_value() {
        let mut labels = vec!["gd10", "gd2", "gd1", "gd9", "base", "gd3", "gd20", "gd100"];
        labels.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            labels,
            ["base", "gd1", "gd2", "gd3", "gd9", "gd10", "gd20", "gd100"]
        );
        assert_eq!(natural_cmp("a9b", "a10a"), Ordering::Less);
        assert_eq!(natural_cmp("geth-mpt", "geth-bintrie"), Ordering::Greater);
        assert_eq!(natural_cmp("gd", "gd1"), Ordering::Less);
        assert_eq!(natural_cmp("gd1", "gd1"), Ordering::Equal);
        assert_ne!(natural_cmp("gd01", "gd1"), Ordering::Equal);
        assert_eq!(
            natural_cmp("x99999999999999999999999", "x100000000000000000000000"),
            Ordering::Less
        );
    }
}
