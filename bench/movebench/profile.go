package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// logTiming is one debug line of an in-process node that timed something.
type logTiming struct {
	Time   time.Time `json:"time"`
	Msg    string    `json:"msg"`
	Action string    `json:"action"`
	Call   string    `json:"call"`
	MS     int64     `json:"ms"`
}

// timings returns what the nodes' debug logs say took time between from
// and to: every source action, target action and request, in time order,
// as "NODE what ms". Only in-process nodes log at debug level.
func (pr *pair) timings(from, to time.Time) []string {
	type line struct {
		at   time.Time
		text string
	}
	var lines []line
	for _, p := range []*proc{pr.a, pr.b} {
		for _, t := range readTimings(p.log, from, to) {
			what := t.Action
			if t.Msg == "request" {
				what = "request " + t.Call
			}
			kind := strings.TrimSuffix(t.Msg, " action")
			if t.Msg == "request" {
				kind = "source"
			}
			lines = append(lines, line{t.Time, fmt.Sprintf("%s %s %s %d ms", p.name, kind, what, t.MS)})
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].at.Before(lines[j].at) })
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}

func readTimings(path string, from, to time.Time) []logTiming {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []logTiming
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var t logTiming
		if json.Unmarshal(sc.Bytes(), &t) != nil {
			continue
		}
		switch t.Msg {
		case "source action", "target action", "request":
		default:
			continue
		}
		// A line is written when its work ends: keep what ended in the window.
		if !t.Time.Before(from) && !t.Time.After(to) {
			out = append(out, t)
		}
	}
	return out
}
