package startflow

import (
	"context"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// checkStoredSecrets refuses a start whose initial message or titles hold
// the value of one of the owner's stored secrets, as a message to the
// conversation would be refused. The refusal is a strictjson.Errors at the
// request's fields. A stored secret that one of the request's own secrets
// overrides is not a secret of the conversation; the request's own secrets
// are checked by StartRequest.ValidateStrict.
func (s *Service) checkStoredSecrets(ctx context.Context, owner string, req v1wire.StartRequest) error {
	if req.InitialMessage == nil && req.Title == nil && req.SuggestedTask == nil {
		return nil
	}
	stored, err := MergeSecrets(ctx, s.Store, s.Sealer, owner, nil)
	if err != nil {
		return err
	}
	for name := range req.Secrets {
		delete(stored, name)
	}
	var errs strictjson.Errors
	if req.InitialMessage != nil {
		errs = v1wire.ContentLeaks(acs.InitialMessageText, req.InitialMessage.Content, stored, "body", "initial_message", "content")
	}
	errs = append(errs, v1wire.TitleSecretErrors(&req, stored, []any{"body"})...)
	if len(errs) > 0 {
		return errs
	}
	return nil
}
