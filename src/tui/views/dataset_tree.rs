//! The Dataset view's tree (TUI-29..TUI-31): topics → subtopics → questions, built from
//! a [`Listing`], with the expanded nodes, the selection and the filter. Pure state: no
//! drawing and no terminal, so its key handling is tested on its own.

use std::collections::{BTreeSet, HashMap};

use crate::dataset::listing::{Listing, Row};

/// A node of the tree; answers have none of their own (TUI-29).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Node {
    /// A topic.
    Topic(String),
    /// A subtopic of a topic.
    Subtopic(String, String),
    /// A question, by ID.
    Question(String),
}

/// One visible line of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The node.
    pub node: Node,
    /// 0 topic, 1 subtopic, 2 question.
    pub depth: usize,
    /// The question's row in the listing, for a question.
    pub row: Option<usize>,
    /// Whether the node is expanded (topics and subtopics).
    pub expanded: bool,
}

/// The topics in first-seen order (subtopics file first, then questions), each with its
/// subtopics in first-seen order, each with its questions' rows.
type Grouped<'a> = Vec<(&'a str, Vec<(&'a str, Vec<usize>)>)>;

fn group(listing: &Listing) -> Grouped<'_> {
    let mut topics: Grouped<'_> = Vec::new();
    let mut topic_at: HashMap<&str, usize> = HashMap::new();
    let mut subtopic_at: HashMap<(&str, &str), usize> = HashMap::new();
    let pairs = listing
        .subtopics
        .iter()
        .map(|s| (s.topic.as_str(), s.subtopic.as_str(), None))
        .chain(
            listing
                .rows
                .iter()
                .enumerate()
                .map(|(i, r)| (r.topic.as_str(), r.subtopic.as_str(), Some(i))),
        );
    for (topic, subtopic, row) in pairs {
        let t = *topic_at.entry(topic).or_insert_with(|| {
            topics.push((topic, Vec::new()));
            topics.len() - 1
        });
        let s = *subtopic_at.entry((topic, subtopic)).or_insert_with(|| {
            topics[t].1.push((subtopic, Vec::new()));
            topics[t].1.len() - 1
        });
        if let Some(row) = row {
            topics[t].1[s].1.push(row);
        }
    }
    topics
}

/// The tree's state.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    expanded: BTreeSet<Node>,
    selected: usize,
    /// The filter, lowercase; empty when none.
    filter: String,
    items: Vec<Item>,
}

impl Tree {
    /// Rebuilds the visible items from `listing`, keeping the selected node (or the one
    /// nearest its old place) and the expanded nodes.
    pub fn rebuild(&mut self, listing: &Listing) {
        let before = self.selected_node().cloned();
        let needle = self.filter.clone();
        let matches = |text: &str| needle.is_empty() || text.to_lowercase().contains(&needle);
        let filtering = !needle.is_empty();
        let mut items = Vec::new();
        for (topic, subtopics) in group(listing) {
            let mut shown = Vec::new();
            for (subtopic, rows) in subtopics {
                let name_matches = matches(subtopic);
                let rows: Vec<usize> = rows
                    .into_iter()
                    .filter(|&r| name_matches || matches(&listing.rows[r].question))
                    .collect();
                if name_matches || !rows.is_empty() {
                    shown.push((subtopic, rows));
                }
            }
            if filtering && shown.is_empty() {
                continue;
            }
            let topic_node = Node::Topic(topic.to_owned());
            let open = filtering || self.expanded.contains(&topic_node);
            items.push(Item {
                node: topic_node,
                depth: 0,
                row: None,
                expanded: open,
            });
            if !open {
                continue;
            }
            for (subtopic, rows) in shown {
                let node = Node::Subtopic(topic.to_owned(), subtopic.to_owned());
                let open = filtering || self.expanded.contains(&node);
                items.push(Item {
                    node,
                    depth: 1,
                    row: None,
                    expanded: open,
                });
                if open {
                    items.extend(rows.into_iter().map(|r| Item {
                        node: Node::Question(listing.rows[r].id.clone()),
                        depth: 2,
                        row: Some(r),
                        expanded: false,
                    }));
                }
            }
        }
        self.selected = before
            .and_then(|node| items.iter().position(|i| i.node == node))
            .unwrap_or_else(|| self.selected.min(items.len().saturating_sub(1)));
        self.items = items;
    }

    /// The visible items.
    #[must_use]
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// The selected item's index.
    #[must_use]
    pub fn selected(&self) -> usize {
        self.selected
    }

    /// The selected item.
    #[must_use]
    pub fn selected_item(&self) -> Option<&Item> {
        self.items.get(self.selected)
    }

    fn selected_node(&self) -> Option<&Node> {
        self.selected_item().map(|i| &i.node)
    }

    /// The selected question's row in `listing`.
    #[must_use]
    pub fn selected_row<'a>(&self, listing: &'a Listing) -> Option<&'a Row> {
        self.selected_item()
            .and_then(|i| i.row)
            .and_then(|r| listing.rows.get(r))
    }

    /// The topic of the selected node.
    #[must_use]
    pub fn selected_topic<'a>(&self, listing: &'a Listing) -> Option<&'a str> {
        let item = self.selected_item()?;
        match &item.node {
            Node::Topic(t) | Node::Subtopic(t, _) => listing
                .rows
                .iter()
                .map(|r| r.topic.as_str())
                .chain(listing.subtopics.iter().map(|s| s.topic.as_str()))
                .find(|topic| topic == t),
            Node::Question(_) => self.selected_row(listing).map(|r| r.topic.as_str()),
        }
    }

    /// Moves the selection by `delta`, clamped.
    pub fn step(&mut self, delta: isize) {
        self.selected = super::step(self.selected, self.items.len(), delta);
    }

    /// Expands (`true`) or collapses the selected topic or subtopic; collapsing a question
    /// or a collapsed node selects its parent.
    pub fn expand(&mut self, open: bool, listing: &Listing) {
        let Some(item) = self.selected_item().cloned() else {
            return;
        };
        if !open && (!item.expanded || item.depth == 2) {
            if let Some(parent) = self.items[..self.selected]
                .iter()
                .rposition(|i| i.depth < item.depth)
            {
                self.selected = parent;
            }
            return;
        }
        if item.depth == 2 {
            return;
        }
        if open {
            self.expanded.insert(item.node);
        } else {
            self.expanded.remove(&item.node);
        }
        self.rebuild(listing);
    }

    /// Enter: expands a collapsed node, collapses an expanded one.
    pub fn toggle(&mut self, listing: &Listing) {
        if let Some(item) = self.selected_item() {
            let open = !item.expanded;
            self.expand(open, listing);
        }
    }

    /// Sets the filter (case-insensitive substring of question texts and subtopic names).
    pub fn set_filter(&mut self, filter: &str, listing: &Listing) {
        self.filter = filter.to_lowercase();
        self.rebuild(listing);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::SubtopicRecord;

    fn row(id: &str, topic: &str, subtopic: &str, question: &str) -> Row {
        Row {
            id: id.into(),
            topic: topic.into(),
            subtopic: subtopic.into(),
            question: question.into(),
            answer: None,
            reasoning: None,
            meta: None,
            excluded: None,
            orphaned: false,
        }
    }

    fn listing() -> Listing {
        Listing {
            subtopics: vec![
                SubtopicRecord {
                    topic: "rust".into(),
                    subtopic: "Traits".into(),
                },
                SubtopicRecord {
                    topic: "rust".into(),
                    subtopic: "Empty".into(),
                },
            ],
            rows: vec![
                row("1", "rust", "Traits", "What is a trait object?"),
                row("2", "rust", "Ownership", "Who owns a Box?"),
                row("3", "go", "Channels", "When does a send block?"),
            ],
            ..Listing::default()
        }
    }

    fn nodes(tree: &Tree) -> Vec<String> {
        tree.items()
            .iter()
            .map(|i| match &i.node {
                Node::Topic(t) => t.clone(),
                Node::Subtopic(_, s) => format!(" {s}"),
                Node::Question(id) => format!("  {id}"),
            })
            .collect()
    }

    #[test]
    fn topics_open_to_subtopics_and_questions_and_collapse_back_to_the_parent() {
        let listing = listing();
        let mut tree = Tree::default();
        tree.rebuild(&listing);
        assert_eq!(nodes(&tree), ["rust", "go"]);
        tree.expand(true, &listing);
        assert_eq!(
            nodes(&tree),
            ["rust", " Traits", " Empty", " Ownership", "go"]
        );
        tree.step(1);
        tree.toggle(&listing);
        assert_eq!(
            nodes(&tree),
            ["rust", " Traits", "  1", " Empty", " Ownership", "go"]
        );
        tree.step(1);
        assert_eq!(
            tree.selected_row(&listing).map(|r| r.id.as_str()),
            Some("1")
        );
        assert_eq!(tree.selected_topic(&listing), Some("rust"));
        tree.expand(false, &listing);
        assert_eq!(tree.selected(), 1, "h on a question selects its subtopic");
        tree.expand(false, &listing);
        assert_eq!(
            nodes(&tree),
            ["rust", " Traits", " Empty", " Ownership", "go"]
        );
        tree.expand(false, &listing);
        assert_eq!(
            tree.selected(),
            0,
            "h on a collapsed subtopic selects its topic"
        );
        tree.toggle(&listing);
        assert_eq!(nodes(&tree), ["rust", "go"]);
        tree.step(5);
        assert_eq!(tree.selected(), 1);
    }

    #[test]
    fn a_reload_keeps_the_selected_node_and_a_filter_shows_matches_expanded() {
        let listing = listing();
        let mut tree = Tree::default();
        tree.rebuild(&listing);
        tree.step(1);
        let mut more = listing.clone();
        more.rows
            .insert(0, row("0", "c", "Pointers", "What is a null?"));
        tree.rebuild(&more);
        assert_eq!(nodes(&tree), ["rust", "c", "go"]);
        assert_eq!(
            tree.selected_item().map(|i| &i.node),
            Some(&Node::Topic("go".into()))
        );
        tree.set_filter("BOX", &more);
        assert_eq!(nodes(&tree), ["rust", " Ownership", "  2"]);
        tree.set_filter("traits", &more);
        assert_eq!(nodes(&tree), ["rust", " Traits", "  1"]);
        tree.set_filter("", &more);
        assert_eq!(nodes(&tree), ["rust", "c", "go"]);
    }
}
