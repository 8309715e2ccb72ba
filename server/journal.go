package server

// journalOn reports whether requests are journaled (--journal-size 0
// turns it off).
func (s *Server) journalOn() bool { return s.opts.JournalSize >= 0 }
