#!/usr/bin/env node
'use strict';
require('../index.js').launch('claude-watchdog');
