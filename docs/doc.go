// Package docs holds hms-proxy's documentation by topic (the Markdown files
// of this folder; README.md at the root says where to start). It has no code:
// its tests keep the documents honest about the repository they describe.
// Every relative link and anchor of every Markdown file resolves, every
// document a code comment or configuration file names exists, and every
// metric, test and repository path a document names is one the code has.
package docs
