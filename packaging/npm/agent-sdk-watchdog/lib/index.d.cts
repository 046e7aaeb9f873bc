export * from '../index.js';
export * from './api.js';
