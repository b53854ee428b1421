package startflow

import (
	"context"
	"strings"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/agentclient"
)

// A start on a sandbox whose agent server this worker has heard from is
// placed without asking it again: the runtime's view (RUNNING, at the
// address and with the session key that answered) stands for the round
// trip, and the skills, which that round trip would have loaded, load
// while the placement is written; the conversation's step records them.

// agentAnswer is an agent server that answered this worker: its address
// and session key.
type agentAnswer struct{ url, key string }

// noteAnswer records that sandboxID's agent server answered c.
func (w *Worker) noteAnswer(sandboxID string, c *agentclient.Client) {
	w.answers.Store(sandboxID, agentAnswer{c.BaseURL, c.Key})
}

// forgetAnswer makes the next start on sandboxID ask its agent server
// again (a call to it failed without an answer).
func (w *Worker) forgetAnswer(sandboxID string) { w.answers.Delete(sandboxID) }

// readyWithoutAsking is probeReady without the round trip, when the
// runtime reports sb RUNNING at the address and with the session key at
// which its agent server answered this worker before, and sb has nothing
// to deliver or delete on it first (what Lifecycle.ReadyAsking does after
// the answer). ok is false otherwise: the caller asks. With nothing to
// prepare, the skills are loaded in the background (loadSkillsAhead):
// the placement records the skills step without its detail, and
// startConversation records it. Should the agent server have stopped
// answering meanwhile, the conversation's creation fails and its step is
// retried, as when it stops between an answer and the creation.
func (w *Worker) readyWithoutAsking(ctx context.Context, t acs.StartTask, req StartRequest, sb acs.Sandbox) (readyProbe, bool) {
	known, ok := w.answers.Load(sb.ID)
	if !ok {
		return readyProbe{}, false
	}
	sb, st := w.lifecycle().Refresh(ctx, sb)
	if st.Status != acs.SandboxRunning || sb.PendingFlush || len(sb.Tombstones) > 0 ||
		known.(agentAnswer) != (agentAnswer{strings.TrimRight(st.AgentURL, "/"), st.SessionKey}) {
		return readyProbe{}, false
	}
	r := readyProbe{sb: sb, client: agentclient.New(st.AgentURL, st.SessionKey), prepare: !nothingToPrepare(sb, t, req)}
	if !r.prepare {
		placed := t
		emptyWorkDir(sb, req)(&placed)
		w.loadSkillsAhead(ctx, t.ID, r.client, placed.ProjectDir)
	}
	return r, true
}

// skillsLoad is a loading of a task's skills under way.
type skillsLoad struct {
	task   string
	done   chan struct{}
	detail string
	err    error
}

// startSkillsLoad loads the skills for projectDir in the background.
func startSkillsLoad(ctx context.Context, task string, c *agentclient.Client, projectDir string) *skillsLoad {
	l := &skillsLoad{task: task, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		l.detail, l.err = loadSkills(ctx, c, projectDir)
	}()
	return l
}

// loadSkillsAhead starts loading task's skills for the rest of the
// delivery (startConversation waits for it); outside a delivery it does
// nothing (startConversation loads them).
func (w *Worker) loadSkillsAhead(ctx context.Context, task string, c *agentclient.Client, projectDir string) {
	if r, ok := ctx.Value(readyKey{}).(*readySandbox); ok {
		r.skills = startSkillsLoad(ctx, task, c, projectDir)
	}
}

// skillsToRecord is, for t placed without its skills step's detail
// (readyWithoutAsking), the wait for its skills' loading, which returns
// the change that records them on the task: the loading the placement
// started in this delivery, or one started now (a later delivery). When
// the skills step has its detail, the wait returns no change.
func (w *Worker) skillsToRecord(ctx context.Context, t acs.StartTask, c *agentclient.Client) func() (func(*acs.StartTask), error) {
	if i := lastStep(t, acs.TaskSettingUpSkills); i < 0 || t.Steps[i].Detail != "" {
		return func() (func(*acs.StartTask), error) { return nil, nil }
	}
	var l *skillsLoad
	if r, ok := ctx.Value(readyKey{}).(*readySandbox); ok && r.skills != nil && r.skills.task == t.ID {
		l = r.skills
	} else {
		l = startSkillsLoad(ctx, t.ID, c, t.ProjectDir)
	}
	return func() (func(*acs.StartTask), error) {
		<-l.done
		if l.err != nil {
			return nil, l.err
		}
		return skillsDetail(l.detail), nil
	}
}
