module github.com/acs-project/acs

go 1.26

require github.com/google/uuid v1.6.0 // indirect
