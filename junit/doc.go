// Package junit writes test reports in the JUnit XML format that CI
// systems read (Jenkins, GitLab, GitHub Actions' report actions): one
// <testsuites> document of suites of test cases, valid against Jenkins'
// junit-4.xsd. It owns the format only; verify decides what the cases are.
package junit
