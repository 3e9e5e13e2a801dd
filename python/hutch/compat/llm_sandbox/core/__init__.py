# SPDX-License-Identifier: Apache-2.0
"""The session machinery shared by every session class."""
