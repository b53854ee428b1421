// Package image holds the tests that keep the sandbox image's Dockerfile (../Dockerfile) honest.
package image
