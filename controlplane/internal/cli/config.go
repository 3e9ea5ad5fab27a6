package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Config is what `weir login` saves: where the admin API is, the bearer
// token, and the default tenant of tenant-scoped commands. The file holds a
// credential, so it is written with mode 0600 in a directory of mode 0700.
type Config struct {
	URL    string `json:"url"`
	Token  string `json:"token"`
	Tenant string `json:"tenant,omitempty"`
}

// configDir returns the directory of the config file: $WEIR_CONFIG_DIR when
// set, else "weir" under the user's config directory.
func configDir(getenv func(string) string) (string, error) {
	if d := getenv("WEIR_CONFIG_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the config directory (set WEIR_CONFIG_DIR): %w", err)
	}
	return filepath.Join(d, "weir"), nil
}

// configPath returns the path of config.json.
func configPath(getenv func(string) string) (string, error) {
	d, err := configDir(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "config.json"), nil
}

// loadConfig reads the saved config. A missing file is an empty config, not
// an error: environment variables may supply everything.
func loadConfig(getenv func(string) string) (Config, error) {
	var c Config
	p, err := configPath(getenv)
	if err != nil {
		return c, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read config: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("read config %s: %w", p, err)
	}
	return c, nil
}

// saveConfig writes c to config.json atomically (a temporary file renamed
// over the old one), the file with mode 0600 and its directory with 0700.
func saveConfig(getenv func(string) string, c Config) (string, error) {
	dir, err := configDir(getenv)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create config directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", fmt.Errorf("restrict config directory: %w", err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode config: %w", err)
	}
	f, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return "", fmt.Errorf("write config: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return "", fmt.Errorf("write config: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return "", fmt.Errorf("write config: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", fmt.Errorf("write config: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write config: %w", err)
	}
	p := filepath.Join(dir, "config.json")
	if err := os.Rename(tmp, p); err != nil {
		return "", fmt.Errorf("write config: %w", err)
	}
	return p, nil
}
