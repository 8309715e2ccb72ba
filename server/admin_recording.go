package server

import (
	"fmt"
	"net/http"

	"github.com/gorilla/mux"
)

func init() {
	adminMethods[adminPrefix+"/recording"] = "POST"
}

func (s *Server) recordingRoutes(r *mux.Router) {
	r.HandleFunc(adminPrefix+"/recording", s.handleRecordingWrite).Methods(http.MethodPost)
}

// handleRecordingWrite writes what the recorder holds into its directory
// now, as shutdown does (WireMock's snapshot): a CI job, or a container
// stopped with SIGKILL, keeps the recording without a clean stop. The
// recorder goes on recording; shutdown writes the whole of it again.
func (s *Server) handleRecordingWrite(w http.ResponseWriter, r *http.Request) {
	if !paramsKnown(w, r) {
		return
	}
	rec, dir := s.opts.Recorder, s.opts.RecordDir
	if rec == nil || dir == "" {
		writeProblem(w, newProblem(http.StatusNotFound, "This server records nothing: start it with serve --record DIR (and --proxy-unmatched URL) or with scenariomock record."))
		return
	}
	files, err := rec.Write(dir)
	if err != nil {
		writeProblem(w, newProblem(http.StatusUnprocessableEntity, fmt.Sprintf("Recording not written: %v.", err)))
		return
	}
	if files == nil {
		files = []string{}
	}
	s.log.Info("recording written", "dir", dir, "files", len(files), "skipped", rec.Skipped())
	writeJSON(w, http.StatusOK, map[string]any{"dir": dir, "files": files, "exchanges": rec.Len(), "skipped": rec.Skipped()})
}
